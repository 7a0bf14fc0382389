import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { call, cli, enc, pair, teardown } from './world.js';

/** `oh-hai fleet ls` against the peer Hub (MA2H §10, §12): the reachability the Hub reports, instants verbatim. */

afterEach(teardown);

describe('fleet ls against the peer Hub', () => {
  it('lists every live session with the reachability the Hub reports, instants verbatim', async () => {
    const { hub, a, b, aAddr } = await pair({ presenceSeconds: 1 });
    // A session nobody ever drained (unknown) and one drained once, long enough ago (offline).
    const quiet = await call(hub, b.token, 'POST', '/v1/sessions', { client_key: 'never-drained', name: 'quiet' });
    const stale = await call(hub, b.token, 'POST', '/v1/sessions', { client_key: 'drained-once', name: 'stale' });
    const staleId = stale.body.session.id as string;
    expect((await call(hub, b.token, 'GET', `/v1/inbox?session=${enc(staleId)}`)).status).toBe(200);
    await waitFor(() => hub.store.reachability(`agent:${b.id}#${staleId}`) === 'offline', { what: 'the drained session to go offline' });

    const r = await cli(a, 'A', ['fleet', 'ls', '--sessions', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { address: string; reachability: string; expires_at: string; name: string | null }[];
    const by = new Map(rows.map((x) => [x.address, x]));
    expect(by.size).toBe(4);
    expect(by.get(`agent:${b.id}#${quiet.body.session.id}`)?.reachability).toBe('unknown');
    expect(by.get(`agent:${b.id}#${staleId}`)?.reachability).toBe('offline');
    expect(by.get(aAddr)?.reachability).toBe('online');
    const stored = hub.store.sessions.get(staleId)!;
    expect(by.get(`agent:${b.id}#${staleId}`)?.expires_at).toBe(new Date(stored.expiresAt).toISOString());

    const text = await cli(a, 'A', ['fleet', 'ls', '--sessions']);
    expect(text.code, text.stderr).toBe(0);
    const line = (addr: string): string => text.stdout.split('\n').find((l) => l.startsWith(addr + ' '))!;
    expect(line(`agent:${b.id}#${quiet.body.session.id}`)).toMatch(/· unknown ·/);
    expect(line(`agent:${b.id}#${staleId}`)).toMatch(/· offline ·/);
    expect(line(aAddr)).toMatch(/· online ·/);
    expect(line(aAddr)).toMatch(/home found/);
    expect(line(`agent:${b.id}#${staleId}`)).toContain(`lease expires ${new Date(stored.expiresAt).toISOString()} (Hub's clock`);
  });
});
