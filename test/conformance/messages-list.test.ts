import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { MessageRec, PeerHub } from '../peer-hub/index.js';
import { acknowledged, bridge, cli, messageWith, pair, party, teardown } from './world.js';

/**
 * Reading what was sent against the peer Hub (MA2H §8, §10, §12): `messages list`/`show`
 * with the delivery track and the Hub's instants verbatim, and the opaque `before` cursor.
 */

afterEach(teardown);

describe('messages list and show against the peer Hub', () => {
  /** The §8 Message fields, as the Hub sent them (the peer Hub adds unknown ones besides). */
  const wireMessage = (hub: PeerHub, m: MessageRec) => {
    const { id, from, to, intent, text, created_at, state, track, destination, prior, response } = hub.store.messageView(m) as { [k: string]: unknown };
    return {
      id,
      from,
      to,
      intent,
      text,
      created_at,
      state,
      track,
      destination,
      ...(prior !== undefined ? { prior } : {}),
      ...(response !== undefined ? { response } : {}),
    };
  };

  it('shows each delivery track with the Hub instants verbatim, newest first; --json carries the Hub Message; pages by the opaque cursor', async () => {
    const { hub, a, b, bAddr } = await pair();
    for (const t of ['first', 'second', 'third']) expect((await cli(a, 'A', ['send', '--to', bAddr, t])).code).toBe(0);
    const [m1, m2, m3] = ['first', 'second', 'third'].map((t) => messageWith(hub, t));
    expect((await bridge(b, 'B', ['--wait', '10'])).code).toBe(0);
    for (const m of [m1!, m2!, m3!]) await acknowledged(hub, m);

    const list = await cli(a, 'A', ['messages', 'list']);
    expect(list.code, list.stderr).toBe(0);
    const lines = list.stdout.split('\n').filter((l) => l.startsWith('M:'));
    expect(lines.map((l) => l.split(' ')[0])).toEqual([m3!.id, m2!.id, m1!.id]);
    for (const [i, m] of [m3!, m2!, m1!].entries()) {
      const track = m.track.map((t) => `${t.state} ${new Date(t.at).toISOString()}`).join(' → ');
      expect(lines[i]).toContain(`· acknowledged · ${track} ·`);
    }

    const json = await cli(a, 'A', ['messages', 'list', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const rows = JSON.parse(json.stdout) as { [k: string]: unknown }[];
    expect(rows).toHaveLength(3);
    for (const [i, m] of [m3!, m2!, m1!].entries()) expect(rows[i]).toMatchObject(wireMessage(hub, m));

    const page = await cli(a, 'A', ['messages', 'list', '--limit', '2']);
    expect(
      page.stdout
        .split('\n')
        .filter((l) => l.startsWith('M:'))
        .map((l) => l.split(' ')[0]),
    ).toEqual([m3!.id, m2!.id]);
    const cursor = /--before (\S+)\)$/m.exec(page.stdout)?.[1];
    expect(cursor, page.stdout).toBeDefined();
    const older = await cli(a, 'A', ['messages', 'list', '--limit', '2', '--before', cursor!]);
    expect(older.code, older.stderr).toBe(0);
    expect(
      older.stdout
        .split('\n')
        .filter((l) => l.startsWith('M:'))
        .map((l) => l.split(' ')[0]),
    ).toEqual([m1!.id]);
    expect(older.stdout).not.toContain('--before');

    const received = await cli(b, 'B', ['messages', 'list', '--received']);
    expect(
      received.stdout
        .split('\n')
        .filter((l) => l.startsWith('M:'))
        .map((l) => l.split(' ')[0]),
    ).toEqual([m3!.id, m2!.id, m1!.id]);
    expect(hub.requests.some((q) => q.route === 'messages.list' && q.target.includes('direction=received'))).toBe(true);

    const show = await cli(a, 'A', ['messages', 'show', m1!.id]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`created: ${new Date(m1!.createdAt).toISOString()} (Hub's clock)`);
  });

  it('a bounced message shows its prior state', async () => {
    const { hub, a, bAddr } = await pair();
    expect((await cli(a, 'A', ['send', '--to', bAddr, 'never read'])).code).toBe(0);
    const m = messageWith(hub, 'never read');
    await waitFor(() => hub.store.entry(m.entryId!)!.delivered, { what: 'spooled at B' });
    hub.store.lapseNow(bAddr.slice(bAddr.indexOf('#') + 1));
    expect(m.state).toBe('bounced');
    const list = await cli(a, 'A', ['messages', 'list', '--json']);
    const row = (JSON.parse(list.stdout) as { state: string; prior: string }[])[0]!;
    expect([row.state, row.prior]).toEqual(['bounced', 'delivered']);
    const show = await cli(a, 'A', ['messages', 'show', m.id]);
    expect(show.stdout).toMatch(/bounced/);
    expect(show.stdout).toMatch(/delivered/);
    // The bounce receipt reaches the sending run (§12: from is the original message's to).
    const atA = await bridge(a, 'A', ['--wait', '10']);
    expect(atA.code, atA.stderr).toBe(0);
    expect(atA.stdout).toContain(`receipt: your message ${m.id} to ${bAddr} bounced after delivered (session_lapsed)`);
  });

  it('a message nobody acknowledged within the Hub TTL shows expired, and the sender run prints the expired receipt', async () => {
    const { hub, a } = await pair({ messageTtlSeconds: 1 });
    // An agent nothing drains: the message stays queued until the TTL passes.
    const absent = party(hub, 'absent');
    expect((await cli(a, 'A', ['send', '--to', absent.address, 'too slow'])).code).toBe(0);
    const m = messageWith(hub, 'too slow');
    await waitFor(() => m.state === 'expired', { what: 'the message TTL to pass' });
    const list = await cli(a, 'A', ['messages', 'list', '--json']);
    const row = (JSON.parse(list.stdout) as { state: string; prior: string }[])[0]!;
    expect([row.state, row.prior]).toEqual(['expired', 'queued']);
    const atA = await bridge(a, 'A', ['--wait', '10']);
    expect(atA.code, atA.stderr).toBe(0);
    expect(atA.stdout).toContain(`receipt: your message ${m.id} to ${absent.address} expired after queued (message_ttl)`);
  });
});
