import { afterEach, describe, expect, it } from 'vitest';
import { collect, startOhHai } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { bridge, call, cli, enc, messageWith, pair, teardown } from './world.js';

/**
 * The sending side's edges against the peer Hub (MA2H §8, §12): `ask --wait`, replying by
 * entry id, the idempotent retry of a send whose response was lost, and the refusals.
 */

afterEach(teardown);

describe('sending edges against the peer Hub', () => {
  it('ask --wait prints the answer given by entry id', async () => {
    const { hub, a, b, bAddr } = await pair();
    const asking = startOhHai(['ask', '--to', bAddr, '--wait', '30', 'ready to merge?'], { env: { ...a.env, MA2H_AGENT_SESSION_ID: 'A' } });
    asking.stdin?.end();
    const done = collect(asking, 45_000);
    const ask = await waitFor(() => messageWith(hub, 'ready to merge?'), { what: 'the ask at the Hub' });
    const atB = await bridge(b, 'B', ['--wait', '10']);
    expect(atB.stdout).toContain('"ready to merge?"');
    // The entry id is the peer Hub's own shape; the CLI maps it to the message through its spool.
    const replied = await cli(b, 'B', ['reply', ask.entryId!, 'yes, merge']);
    expect(replied.code, replied.stderr).toBe(0);
    expect(ask.response?.text).toBe('yes, merge');
    const r = await done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"yes, merge"');
  });

  it('a send whose response was lost is retried with the same idempotency key: one message at the Hub', async () => {
    const { hub, a, bAddr } = await pair();
    let lost = false;
    hub.knobs.fault = (q) => (q.route === 'messages.send' && !lost ? ((lost = true), { drop: 'after' }) : null);
    const r = await cli(a, 'A', ['send', '--to', bAddr, 'exactly once']);
    expect(r.code, r.stderr).toBe(0);
    expect([...hub.store.messages.values()].filter((m) => m.text === 'exactly once')).toHaveLength(1);
    expect(hub.requests.filter((q) => q.route === 'messages.send')).toHaveLength(2);
    // The replay answers with the message as it stands now (queued, or already delivered).
    const [first] = r.stdout.split('\n');
    expect(first).toMatch(/^(queued|delivered)\b/);
    expect(first).toContain(`: notify ${messageWith(hub, 'exactly once').id} to `);
  });

  it('refusals: no such recipient → 4, a recipient session that ended → 4, messaging off → 3', async () => {
    const { hub, a, b, bAddr } = await pair();
    const nobody = await cli(a, 'A', ['send', '--to', 'agent:nobody.here', 'hello?']);
    expect(nobody.code, nobody.stderr).toBe(4);
    const sb = bAddr.slice(bAddr.indexOf('#') + 1);
    expect((await call(hub, b.token, 'POST', `/v1/sessions/${enc(sb)}/close`)).status).toBe(200);
    const ended = await cli(a, 'A', ['send', '--to', bAddr, 'are you there?']);
    expect(ended.code, ended.stderr).toBe(4);
    expect(ended.stderr).toMatch(/closed/);
    await call(hub, hub.humanToken, 'PATCH', '/v1/account', { agent_messaging: false });
    const off = await cli(a, 'A', ['send', '--to', b.address, 'anyone?']);
    expect(off.code, off.stderr).toBe(3);
    expect(off.stderr).toMatch(/agent messaging/i);
  });
});
