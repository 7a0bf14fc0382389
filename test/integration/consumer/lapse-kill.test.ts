import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { FAST_HUB, useBenches, waitFor, type Bench } from './harness.js';
import { expectEachReplacementOnce, killAtSpooledTransition, NAMED_AND_UNNAMED, runningBench, sessionId } from './transition-kill.js';

/**
 * kill -9 of the connection while it replaces a session that lapsed under it: right after the
 * address_changed transition is spooled, before session.json names the new session. Each cycle
 * holds the stream's next connect past the lease (the session lapses before it is presented),
 * kills the connection at that instant, queues principal mail, and starts a clean one. At the
 * end: every message spooled once and acknowledged, each session replaced by exactly one
 * spooled transition, and one session live. The next connection finds the registered session
 * from the spooled transition and adopts it: docs/consumer.md "The session".
 */
const CYCLES = 4;
const LEASE_SECONDS = 3;
const RUN_TIMEOUT_MS = 180_000;

// A lease long enough for a restarted connection to reach the session before it lapses too (a
// second lapse is a second replacement, which the assertions allow, but not what is tested here).
const world = useBenches({ args: [...FAST_HUB, '--lease-min-seconds', '1', '--lease-default-seconds', String(LEASE_SECONDS)], faults: true }, { logTail: 80 });

describe('kill -9 while the connection replaces a lapsed session', () => {
  it.each(NAMED_AND_UNNAMED)(
    `$run, at the spooled transition, ${CYCLES} cycles: every message spooled once and acknowledged, one transition per lapsed session`,
    async ({ name }) => {
      const run = await runningBench(world, name);
      const first = sessionId(run.bench);
      const bench = run.bench;
      let consumer: ChildProcess = run.consumer;
      const principal = `agent:${bench.me.id}`;
      const sent: string[] = [];
      let inWindow = 0;
      for (let cycle = 0; cycle < CYCLES; cycle += 1) {
        const sid = sessionId(bench);
        await world.hub.faults([{ class: 'stream', action: 'delay', delay_ms: (LEASE_SECONDS + 1.5) * 1000, count: 1 }]);
        if (await killAtSpooledTransition(bench, consumer, sid, 30_000)) inWindow += 1;
        for (let i = 0; i < 2; i += 1) sent.push(await bench.notify(`cycle ${cycle} message ${i}`, principal));
        consumer = bench.start();
        await waitFor(() => (bench.consumer()?.state === 'running' && sessionId(bench) !== sid ? true : null), { what: `a session after ${sid}` });
      }
      for (const t of await expectEachReplacementOnce(bench, sent, first, consumer)) expect(t.reason).toBe('session_lapsed');
      expect(inWindow, 'kills between the spooled transition and session.json').toBeGreaterThan(0);
    },
    RUN_TIMEOUT_MS,
  );
});
