import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { PeerHub } from '../peer-hub/index.js';
import { bridge, consumers, directive, live, party, peerHub, sendAs, teardown } from './world.js';

/**
 * `oh-hai bridge` over long-poll: a peer Hub that advertises no `inbound.stream_url`
 * (MA2H §1: long-poll only), and one that does while the bridge is told `--transport poll`.
 */

afterEach(teardown);

const WEIRD = 'poll\u2028me\u2029— ü 🙂';
const shown = (text: string): string =>
  JSON.stringify(text)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
const entryOf = (hub: PeerHub, messageId: string): string => hub.store.messages.get(messageId)!.entryId!;
const drains = (hub: PeerHub) => hub.requests.filter((r) => r.route === 'inbox.drain');

describe('bridge over long-poll against the peer Hub', () => {
  it('with no stream_url advertised: prints a directive, a notify and a U+2028 text, acks after read, a re-run prints nothing', async () => {
    const hub = await peerHub({ streamPath: null });
    const a = party(hub, 'poller');
    const b = party(hub, 'sender');
    const first = await bridge(a, 'p1', ['--interval', '0.2', '--wait', '0.5']);
    expect(first.code, first.stderr).toBe(0);
    const s = await live(hub, a, 'p1');
    const here = `agent:${a.id}#${s.id}`;
    const ids = [
      await directive(hub, here, 'poll directive'),
      await sendAs(hub, b, { to: here, intent: 'notify', text: WEIRD }),
      await sendAs(hub, b, { to: a.address, intent: 'notify', text: 'principal, polled' }),
    ].map((m) => entryOf(hub, m));
    await waitFor(() => ids.every((id) => hub.store.entry(id)!.delivered), { what: 'all three spooled (acked delivered)' });

    const r = await bridge(a, 'p1', ['--wait', '5']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain(`directive from human:${hub.store.accountId} (${ids[0]})`);
    expect(lines[1]).toContain(`notify from ${b.address}`);
    expect(lines[1]!.endsWith(shown(WEIRD))).toBe(true);
    expect(lines[2]).toContain('"principal, polled"');
    await waitFor(() => ids.every((id) => hub.store.entry(id)!.acknowledged), { what: 'all three acknowledged' });
    const again = await bridge(a, 'p1', ['--wait', '1']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('');

    // The connection polled: no stream was ever asked for, every session drain carried the session
    // and the consumer header, and none sent wait= (§4: the session drain does not).
    expect(consumers(a).map((c) => c.transport)).toEqual(['poll']);
    expect(hub.requests.some((q) => q.route === 'inbox.stream' || q.target.includes('/stream'))).toBe(false);
    const sessionDrains = drains(hub).filter((q) => q.agentId === a.id);
    expect(sessionDrains.length).toBeGreaterThan(2);
    for (const q of sessionDrains) {
      const query = new URL(q.target, 'http://x').searchParams;
      expect(query.get('session')).toBe(s.id);
      expect(query.has('wait')).toBe(false);
      expect(q.consumer).toMatch(/^home=[A-Za-z0-9._:-]+; host=[A-Za-z0-9._:-]+; pid=\d+$/);
    }
    expect(hub.tokenInUrl).toEqual([]);
  });

  it('--transport poll against a Hub that offers SSE drains and never streams', async () => {
    const hub = await peerHub();
    const a = party(hub, 'forced');
    const first = await bridge(a, 'p2', ['--transport', 'poll', '--interval', '0.2', '--wait', '0.5']);
    expect(first.code, first.stderr).toBe(0);
    const s = await live(hub, a, 'p2');
    const id = entryOf(hub, await directive(hub, `agent:${a.id}#${s.id}`, WEIRD));
    await waitFor(() => hub.store.entry(id)!.delivered, { what: 'the directive spooled' });
    const r = await bridge(a, 'p2', ['--wait', '5']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(shown(WEIRD));
    expect(hub.requests.some((q) => q.route === 'inbox.stream')).toBe(false);
    await waitFor(() => hub.store.entry(id)!.acknowledged, { what: 'the directive acknowledged' });
  });
});
