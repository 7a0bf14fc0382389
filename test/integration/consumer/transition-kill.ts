import type { ChildProcess } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { spoolTransition } from '../../helpers/spool.js';
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

/**
 * The state the kill leaves, made directly: session A ended — closed by a human and the stop
 * lifted, or (`stoodDown`) closed by the agent and forgotten here into stood-down.json as
 * `oh-hai session close` does — session B registered, the transition A → B spooled, and
 * session.json not naming B.
 */
export async function killedAfterSpooling(bench: Bench, ended: 'by_operator' | 'stood_down' = 'by_operator'): Promise<{ a: string; b: string }> {
  const human = { token: bench.hub.humanToken };
  bench.settings();
  bench.attend();
  const consumer = bench.start();
  await bench.waitRunning();
  const { id: a, address } = bench.session()!;
  if (ended === 'by_operator') {
    expect((await hubCall(bench.hub, 'POST', `/v1/sessions/${a}/operator-close`, { ...human, body: {} })).status).toBe(200);
    await exited(consumer);
    expect((await hubCall(bench.hub, 'POST', '/v1/operator-stops/lift', { ...human, body: { agent_id: bench.me.id } })).status).toBe(200);
  } else {
    consumer.kill('SIGKILL');
    await exited(consumer);
    expect((await hubCall(bench.hub, 'POST', `/v1/sessions/${a}/close`, { token: bench.me.token, body: {} })).status).toBe(200);
    bench.writeRaw(
      'stood-down.json',
      JSON.stringify({ sessions: [{ id: a, address, hub_state: 'closed', closed_at: null, stood_down_at: Date.now() }] }) + '\n',
    );
    unlinkSync(path.join(bench.dir, 'session.json'));
  }
  const created = await hubCall(bench.hub, 'POST', '/v1/sessions', { token: bench.me.token, body: { client_key: 'test-session', name: 'builder-1' } });
  expect(created.status).toBe(201);
  const b = created.body.session as { id: string; address: string };
  spoolTransition(bench.dir, {
    from_session: a,
    to_session: b.id,
    from_address: address,
    to_address: b.address,
    reason: ended === 'by_operator' ? 'session_closed_by_operator' : 'session_closed',
  });
  return { a, b: b.id };
}
