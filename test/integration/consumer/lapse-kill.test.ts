import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { exited, expectEachAcknowledgedOnce, expectOneTransitionPerReplacement, FAST_HUB, hubCall, killWhen, useBenches, waitFor, type Bench } from './harness.js';

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
const world = useBenches(
  { args: [...FAST_HUB, '--lease-min-seconds', '1', '--lease-default-seconds', String(LEASE_SECONDS)], faults: true },
  { logTail: 80 },
);

const transitions = (b: Bench) => b.spool().filter((l) => l.type === 'transition');

const sessionId = (b: Bench): string => b.session()!.id;

describe('kill -9 while the connection replaces a lapsed session', () => {
  it.each([
    { run: 'a named run', name: 'lapse-kill' },
    { run: 'an unnamed run', name: null },
  ])(
    `$run, at the spooled transition, ${CYCLES} cycles: every message spooled once and acknowledged, one transition per lapsed session`,
    async ({ name }) => {
      const bench = await world.bench();
      bench.settings({ max_retries: 1000, name });
      bench.attend();
      const principal = `agent:${bench.me.id}`;
      const sent: string[] = [];
      let inWindow = 0;
      let consumer: ChildProcess = bench.start();
      await bench.waitRunning();
      const first = sessionId(bench);
      for (let cycle = 0; cycle < CYCLES; cycle += 1) {
        const sid = sessionId(bench);
        const seen = transitions(bench).length;
        await world.hub.faults([{ class: 'stream', action: 'delay', delay_ms: (LEASE_SECONDS + 1.5) * 1000, count: 1 }]);
        await killWhen(bench.dir, consumer, () => transitions(bench).length > seen, 30_000);
        await exited(consumer);
        if (sessionId(bench) === sid && transitions(bench).at(-1)?.from_session === sid) inWindow += 1;
        for (let i = 0; i < 2; i += 1) sent.push(await bench.notify(`cycle ${cycle} message ${i}`, principal));
        consumer = bench.start();
        await waitFor(() => (bench.consumer()?.state === 'running' && sessionId(bench) !== sid ? true : null), { what: `a session after ${sid}` });
      }
      await expectEachAcknowledgedOnce(bench, sent, () => {
        const last = bench.spool().at(-1);
        if (last) bench.advanceCursor(last.seq);
      });

      const final = sessionId(bench);
      for (const t of expectOneTransitionPerReplacement(bench, first, final)) expect(t.reason).toBe('session_lapsed');
      const fleet = await hubCall(world.hub, 'GET', '/v1/fleet', { token: world.hub.humanToken });
      expect(
        (fleet.body.sessions as { agent_id: string; session_id: string }[]).filter((s) => s.agent_id === bench.me.id).map((s) => s.session_id),
        'no session registered and abandoned',
      ).toEqual([final]);
      expect(consumer.exitCode).toBeNull();
      expect(inWindow, 'kills between the spooled transition and session.json').toBeGreaterThan(0);
    },
    RUN_TIMEOUT_MS,
  );
});
