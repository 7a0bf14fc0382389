import { describe, expect, it } from 'vitest';
import { FAST_HUB, useBenches, waitFor } from './harness.js';
import { startCrlfProxy } from './sse-proxy.js';

const world = useBenches({ args: FAST_HUB });

describe('delivery', () => {
  it('SSE: registers a named session, spools a notify, acks it delivered, and acknowledged only after the cursor passes it', async () => {
    const bench = await world.bench();
    bench.settings({ transport: 'auto' });
    bench.attend();
    const p = bench.start();
    const rec = await bench.waitRunning();
    expect(rec.transport).toBe('sse');
    const session = bench.session()!;
    expect(session.address).toMatch(new RegExp(`^agent:${bench.me.id}#sess_`));
    expect(session.name).toBe('builder-1');

    const id = await bench.notify('hello over SSE');
    const [line] = await waitFor(() => (bench.entries().length === 1 ? bench.entries() : null), { what: 'the notify spooled' });
    expect(line).toMatchObject({ seq: 1, type: 'entry', session: session.id, entry: { kind: 'message', text: 'hello over SSE' } });
    expect(line!.signature).toMatch(/^t=\d+,jti=/);
    await waitFor(async () => (await bench.track(id)).state === 'delivered', { what: 'delivered at the Hub' });
    // Several holds go by: nothing acknowledges it while the cursor has not passed it.
    const renewedAt = bench.session()!.renewed_at;
    await waitFor(() => bench.session()!.renewed_at > renewedAt + 1000, { what: 'hold-bound reconnects renewing the lease' });
    expect((await bench.track(id)).state).toBe('delivered');

    bench.advanceCursor(1);
    await waitFor(async () => (await bench.track(id)).state === 'acknowledged', { what: 'acknowledged after the cursor passed it' });
    expect(bench.entries()).toHaveLength(1);
    p.kill('SIGTERM');
    const { record, code } = await bench.waitStopped(p);
    expect(code).toBe(0);
    expect(record).toMatchObject({ state: 'stopped', exit_code: 0, stop_reason: 'signal' });
  });
});

describe('transports', () => {
  it('long-poll (--transport poll) delivers and acknowledges after the cursor, renewing the lease on every drain', async () => {
    const bench = await world.bench();
    bench.settings({ transport: 'poll', interval_seconds: 0.1 });
    bench.attend();
    bench.start();
    expect((await bench.waitRunning()).transport).toBe('poll');
    const first = bench.session()!.renewed_at;
    const id = await bench.notify('hello over long-poll');
    await waitFor(() => bench.entries().length === 1, { what: 'the notify spooled' });
    await waitFor(async () => (await bench.track(id)).state === 'delivered', { what: 'delivered' });
    await waitFor(() => bench.session()!.renewed_at > first, { what: 'a drain renewing the lease' });
    bench.advanceCursor(1);
    await waitFor(async () => (await bench.track(id)).state === 'acknowledged', { what: 'acknowledged' });
    expect(bench.entries()).toHaveLength(1);
  });

  it('a hold-bound reconnect is not a retry: max_retries 1 runs through many holds', async () => {
    const quick = await world.ownHub({ args: ['--stream-max-hold-seconds', '0.3', '--keepalive-seconds', '0.1'] });
    const bench = await world.bench({ on: quick });
    bench.settings({ max_retries: 1 });
    bench.attend();
    const p = bench.start();
    await bench.waitRunning();
    const renewals = new Set<number>();
    await waitFor(
      () => {
        renewals.add(bench.session()!.renewed_at);
        return renewals.size >= 8;
      },
      { what: 'eight hold-bound reconnects', intervalMs: 20 },
    );
    expect(p.exitCode).toBeNull();
    expect(bench.consumer()!.state).toBe('running');
    expect(bench.log()).not.toMatch(/retry \d/);
  });

  it('a U+2028 in a directive and CRLF-framed SSE are data, not tampering: they deliver', async () => {
    const proxy = await startCrlfProxy(world.hub.url);
    const bench = await world.bench();
    try {
      bench.settings({ hub: proxy.url });
      bench.attend();
      bench.start();
      await bench.waitRunning();
      const text = 'line\u2028separated\u2029paragraph\r\nand a "quote" — café';
      await bench.directive(text);
      const [line] = await waitFor(() => (bench.entries().length === 1 ? bench.entries() : null), { what: 'the directive spooled' });
      expect(line!.entry).toMatchObject({ kind: 'directive', text });
      expect(bench.consumer()!.state).toBe('running');
    } finally {
      // The consumer goes before its proxy (dispose again after the test is a no-op).
      await bench.dispose();
      await proxy.close();
    }
  });
});

describe('the sender policy and addressing', () => {
  it('with no policy declared: a notify is delivered, an addressed ask is refused, left unacked and logged once', async () => {
    const bench = await world.bench();
    bench.settings({ allow_from: null });
    bench.attend();
    bench.start();
    const rec = await bench.waitRunning();
    expect(rec.policy).toBeNull();
    const askId = await bench.ask('may I?');
    const notifyId = await bench.notify('fyi');
    await waitFor(() => bench.entries().some((e) => e.entry?.text === 'fyi'), { what: 'the notify spooled' });
    // Let several holds redeliver the refused ask.
    const renewed = bench.session()!.renewed_at;
    await waitFor(() => bench.session()!.renewed_at > renewed + 1500, { what: 'holds redelivering the ask' });
    expect(bench.entries().map((e) => e.entry?.text)).toEqual(['fyi']);
    expect((await bench.track(askId)).state).toBe('queued');
    expect((await bench.track(notifyId)).state).toBe('delivered');
    const refusals = bench
      .log()
      .split('\n')
      .filter((l) => l.includes('refused entry'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(/no sender policy is declared/);
    expect(bench.consumer()!.state).toBe('running');
  });

  it('an allow_from that admits the peer delivers its ask', async () => {
    const bench = await world.bench();
    bench.settings({ allow_from: [`agent:${bench.peer.id}`] });
    bench.attend();
    bench.start();
    expect((await bench.waitRunning()).policy).toEqual([`agent:${bench.peer.id}`]);
    await bench.ask('review PR 12?');
    await waitFor(() => bench.entries().some((e) => e.entry?.text === 'review PR 12?'), { what: 'the ask spooled' });
  });

  it('a principal-addressed directive is claimed by the session (first-claim-wins)', async () => {
    const bench = await world.bench();
    bench.settings();
    bench.attend();
    bench.start();
    await bench.waitRunning();
    await bench.directive('to whichever run claims it', `agent:${bench.me.id}`);
    const [line] = await waitFor(() => (bench.entries().length === 1 ? bench.entries() : null), { what: 'the directive spooled' });
    expect(line!.entry!.to).toBe(`agent:${bench.me.id}`);
  });
});
