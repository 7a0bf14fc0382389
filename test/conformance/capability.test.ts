import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { PeerHub, PeerHubOptions } from '../peer-hub/index.js';
import { bridge, directive, fatal, live, party, peerHub, teardown } from './world.js';

/** MA2H §1: what the bridge reads from the capability document, and the refusals it must make. */

afterEach(teardown);

const entryOf = (hub: PeerHub, messageId: string): string => hub.store.messages.get(messageId)!.entryId!;
const SESSION_WORK = ['sessions.create', 'inbox.stream', 'inbox.drain', 'inbox.ack'];

describe('capability refusals stop the bridge with a clear message and register nothing', () => {
  const cases: [string, PeerHubOptions, RegExp][] = [
    ['MA2H 0.4.9', { version: '0.4.9' }, /0\.4\.9.*0\.5/],
    ['MA2H 0.4.99 (semver, not decimal)', { version: '0.4.99' }, /0\.4\.99/],
    ['inbound.session_param false', { sessionParam: false }, /session_param/],
    ['no inbound.session_param', { sessionParam: null }, /session_param/],
    ['another protocol', { protocol: 'MA3X' }, /MA3X|protocol/],
  ];
  for (const [what, opts, says] of cases) {
    it(what, async () => {
      const hub = await peerHub(opts);
      const a = party(hub, 'cap');
      const r = await bridge(a, 'cap', ['--wait', '20']);
      // Not a fault to retry (13) and not a success: a stop with the reason.
      expect(r.code).not.toBe(0);
      expect(r.code).not.toBe(13);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(fatal(r.code!));
      expect(r.stderr).toMatch(says);
      expect(hub.requests.some((q) => q.route === 'capability')).toBe(true);
      expect(hub.requests.filter((q) => SESSION_WORK.includes(q.route))).toEqual([]);
    });
  }

  it('MA2H 0.10.0 is newer than 0.5 (semver, not string order) and is used', async () => {
    const hub = await peerHub({ version: '0.10.0' });
    const a = party(hub, 'semver');
    const r = await bridge(a, 'sv', ['--wait', '0.5']);
    expect(r.code, r.stderr).toBe(0);
    await live(hub, a, 'sv');
  });
});

describe('the replay window', () => {
  /** Register, then make every delivery from now on carry a `t` this many seconds old. */
  async function deliverAged(opts: PeerHubOptions, ageSeconds: number) {
    const hub = await peerHub(opts);
    const a = party(hub, 'replay');
    expect((await bridge(a, 'rw', ['--wait', '0.5'])).code).toBe(0);
    const s = await live(hub, a, 'rw');
    hub.knobs.signatureAgeSeconds = ageSeconds;
    const id = entryOf(hub, await directive(hub, `agent:${a.id}#${s.id}`, `signed ${ageSeconds} s ago`));
    const r = await bridge(a, 'rw', ['--wait', '20']);
    return { hub, r, id };
  }

  it('with no replay_window_seconds advertised, a t 200 s old is inside the 300 s fallback', async () => {
    const { hub, r, id } = await deliverAged({ replayWindowSeconds: null }, 200);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"signed 200 s ago"');
    await waitFor(() => hub.store.entry(id)!.acknowledged, { what: 'the entry acknowledged' });
  });

  it('with no replay_window_seconds advertised, a t 400 s old fails verification: exit 12, nothing acked', async () => {
    const { hub, r, id } = await deliverAged({ replayWindowSeconds: null }, 400);
    expect(r.code, r.stderr).toBe(12);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(fatal(12));
    expect(hub.store.entry(id)!.delivered).toBe(false);
    expect(hub.store.entry(id)!.acknowledged).toBe(false);
  });

  it("an advertised window is the Hub's, not the fallback: 100 s old against 90 s is exit 12", async () => {
    const { hub, r, id } = await deliverAged({ replayWindowSeconds: 90 }, 100);
    expect(r.code, r.stderr).toBe(12);
    expect(hub.store.entry(id)!.acknowledged).toBe(false);
  });
});

describe('what else the document says', () => {
  it('the stream is wherever inbound.stream_url says', async () => {
    const hub = await peerHub({ streamPath: '/elsewhere/sse/inbox' });
    const a = party(hub, 'where');
    expect((await bridge(a, 'w', ['--wait', '0.5'])).code).toBe(0);
    const s = await live(hub, a, 'w');
    const id = entryOf(hub, await directive(hub, `agent:${a.id}#${s.id}`, 'found the stream'));
    const r = await bridge(a, 'w', ['--wait', '10']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"found the stream"');
    await waitFor(() => hub.store.entry(id)!.acknowledged, { what: 'acknowledged' });
    const streams = hub.requests.filter((q) => q.route === 'inbox.stream');
    expect(streams.length).toBeGreaterThan(0);
    expect(streams.every((q) => q.target.startsWith('/elsewhere/sse/inbox?'))).toBe(true);
    expect(hub.requests.filter((q) => q.route === 'inbox.drain')).toEqual([]);
  });

  it("Hub instants are printed verbatim, as the Hub's, even from a Hub whose clock is two days behind", async () => {
    const hub = await peerHub({ clockSkewMs: -2 * 24 * 3600 * 1000, leaseDefaultSeconds: 30 });
    const a = party(hub, 'skew');
    const first = await bridge(a, 'sk', ['--wait', '1']);
    expect(first.code, first.stderr).toBe(0);
    const s = await live(hub, a, 'sk');
    // The run that started the connection may end before it registered (a loaded machine's
    // connection can take over a second to start): the epilogue is read from a run after that.
    const r = await bridge(a, 'sk', ['--wait', '0']);
    expect(r.code, r.stderr).toBe(0);
    const m = /^oh-hai bridge: lease — (\S+) expires (\S+) \(Hub's clock; last renewed \d+s ago\)/m.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    expect(m![1]).toBe(s.id);
    // The instant is one the Hub sent: two days behind this machine, never "corrected".
    expect(Date.now() - Date.parse(m![2]!)).toBeGreaterThan(47 * 3600 * 1000);
    // No claim built from subtracting our clock from theirs: no lapse warning, no "left".
    expect(r.stderr).not.toContain('⚠️');
    const epilogue = r.stderr.split('\n').filter((l) => l.startsWith('oh-hai bridge: lease'));
    expect(epilogue.join('\n')).not.toMatch(/lapsed|remaining|\bleft\b/);
  });
});
