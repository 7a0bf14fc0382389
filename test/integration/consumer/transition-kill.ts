import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { exited, expectEachAcknowledgedOnce, hubCall, killWhen, type Bench, type BenchWorld, type SpoolLine } from './harness.js';

/**
 * What the kill tests of a session's replacement share (lift-kill, lapse-kill): the kill at the
 * instant a transition is spooled, and what must hold after all the cycles.
 */

/** Named, a re-registration gets the same session back; unnamed, another one (the first abandoned). */
export const NAMED_AND_UNNAMED = [
  { run: 'a named run', name: 'builder-1' },
  { run: 'an unnamed run', name: null },
] as const;

const transitions = (b: Bench): SpoolLine[] => b.spool().filter((l) => l.type === 'transition');

export const sessionId = (b: Bench): string => b.session()!.id;

/** A bench of `world` whose connection runs under `name`, attended and retrying for the whole run: where the cycles start. */
export async function runningBench(world: BenchWorld, name: string | null): Promise<{ bench: Bench; consumer: ChildProcess }> {
  const bench = await world.bench();
  bench.settings({ max_retries: 1000, name });
  bench.attend();
  const consumer = bench.start();
  await bench.waitRunning();
  return { bench, consumer };
}

/**
 * SIGKILL `consumer` as soon as it spools a transition from `sid`'s replacement (or after `ms`);
 * true when the kill landed before session.json named the new session: the window tested.
 */
export async function killAtSpooledTransition(bench: Bench, consumer: ChildProcess, sid: string, ms: number): Promise<boolean> {
  const seen = transitions(bench).length;
  await killWhen(bench.dir, consumer, () => transitions(bench).length > seen, ms);
  await exited(consumer);
  return sessionId(bench) === sid && transitions(bench).at(-1)?.from_session === sid;
}

/**
 * After the cycles: every message of `sent` spooled once and acknowledged; the spooled address
 * changes lead from `first` to the live session one step each (every session replaced once,
 * none skipped: the reader prints each record once, so each change is printed once); that
 * session the agent's only live one, no registered one abandoned; the connection running.
 */
export async function expectEachReplacementOnce(bench: Bench, sent: readonly string[], first: string, consumer: ChildProcess): Promise<SpoolLine[]> {
  await expectEachAcknowledgedOnce(bench, sent, () => {
    const last = bench.spool().at(-1);
    if (last) bench.advanceCursor(last.seq);
  });
  const live = sessionId(bench);
  const spooled = transitions(bench);
  const steps = spooled.map((t) => `${t.from_session} → ${t.to_session}`).join(', ');
  let at = first;
  for (const t of spooled) {
    expect(t.from_session, `the address changes in order: ${steps}`).toBe(at);
    at = t.to_session!;
  }
  expect(at, `the address changes end at the live session: ${steps}`).toBe(live);
  const fleet = await hubCall(bench.hub, 'GET', '/v1/fleet', { token: bench.hub.humanToken });
  expect(
    (fleet.body.sessions as { agent_id: string; session_id: string }[]).filter((s) => s.agent_id === bench.me.id).map((s) => s.session_id),
    'no session registered and abandoned',
  ).toEqual([live]);
  expect(consumer.exitCode).toBeNull();
  return spooled;
}
