import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAST_HUB, makeBench, startHub, waitFor, type Bench } from './harness.js';
import type { TestHub } from '../../helpers/hub.js';

let hub: TestHub;
let bench: Bench | null = null;

beforeAll(async () => {
  hub = await startHub({ args: FAST_HUB });
});
afterAll(async () => {
  await hub?.dispose();
});
afterEach(async () => {
  await bench?.dispose();
  bench = null;
});

describe('delivery', () => {
  it('SSE: registers a named session, spools a notify, acks it delivered, and acknowledged only after the cursor passes it', async () => {
    bench = await makeBench(hub);
    bench.settings({ transport: 'auto' });
    bench.attend();
    const p = bench.start();
    const rec = await bench.waitRunning();
    expect(rec.transport).toBe('sse');
    const session = bench.session()!;
    expect(session.address).toMatch(new RegExp(`^agent:${bench.me.id}#sess_`));
    expect(session.name).toBe('builder-1');

    const id = await bench.notify('hello over SSE');
    const [line] = await waitFor(() => (bench!.entries().length === 1 ? bench!.entries() : null), { what: 'the notify spooled' });
    expect(line).toMatchObject({ seq: 1, type: 'entry', session: session.id, entry: { kind: 'message', text: 'hello over SSE' } });
    expect(line!.signature).toMatch(/^t=\d+,jti=/);
    await waitFor(async () => (await bench!.track(id)).state === 'delivered', { what: 'delivered at the Hub' });
    // Several holds go by: nothing acknowledges it while the cursor has not passed it.
    const renewedAt = bench.session()!.renewed_at;
    await waitFor(() => bench!.session()!.renewed_at > renewedAt + 1000, { what: 'hold-bound reconnects renewing the lease' });
    expect((await bench.track(id)).state).toBe('delivered');

    bench.advanceCursor(1);
    await waitFor(async () => (await bench!.track(id)).state === 'acknowledged', { what: 'acknowledged after the cursor passed it' });
    expect(bench.entries()).toHaveLength(1);
    p.kill('SIGTERM');
    const { record, code } = await bench.waitStopped(p);
    expect(code).toBe(0);
    expect(record).toMatchObject({ state: 'stopped', exit_code: 0, stop_reason: 'signal' });
  });
});
