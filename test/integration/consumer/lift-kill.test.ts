import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { exited, FAST_HUB, hubCall, useBenches, waitFor, type Bench } from './harness.js';
import { expectEachReplacementOnce, killAtSpooledTransition, killedAfterSpooling, NAMED_AND_UNNAMED, runningBench, sessionId } from './transition-kill.js';

/**
 * kill -9 of the connection while it registers a new session after a human lifted the
 * kill-switch's stop: right after the address_changed transition is spooled, before
 * session.json names the new session. Each cycle closes the session as the operator, lifts the
 * stop, queues principal mail, and kills a connection at that instant; a clean one finishes.
 * At the end: every message spooled once and acknowledged, exactly one transition per closed
 * session, each to the session registered after it, and one session live. The next connection
 * finds the registered session from the spooled transition and adopts it, with or without a
 * name: docs/consumer.md "The session".
 */
const CYCLES = 6;
const RUN_TIMEOUT_MS = 180_000;

const world = useBenches({ args: FAST_HUB }, { logTail: 80 });

const transitions = (b: Bench) => b.spool().filter((l) => l.type === 'transition');

describe('kill -9 while the connection registers after a lift', () => {
  it.each(NAMED_AND_UNNAMED)(
    `$run, at the spooled transition, ${CYCLES} cycles: every message spooled once and acknowledged, one transition per closed session`,
    async ({ name }) => {
      const run = await runningBench(world, name);
      const bench = run.bench;
      let consumer: ChildProcess = run.consumer;
      const human = { token: world.hub.humanToken };
      const principal = `agent:${bench.me.id}`;
      const sent: string[] = [];
      const closed: string[] = [];
      let inWindow = 0;
      for (let cycle = 0; cycle < CYCLES; cycle += 1) {
        const sid = sessionId(bench);
        expect((await hubCall(world.hub, 'POST', `/v1/sessions/${sid}/operator-close`, { ...human, body: {} })).status).toBe(200);
        closed.push(sid);
        await exited(consumer);
        for (let i = 0; i < 2; i += 1) sent.push(await bench.notify(`cycle ${cycle} message ${i}`, principal));
        expect((await hubCall(world.hub, 'POST', '/v1/operator-stops/lift', { ...human, body: { agent_id: bench.me.id } })).status).toBe(200);
        consumer = bench.start();
        if (await killAtSpooledTransition(bench, consumer, sid, 15_000)) inWindow += 1;
        // The next connection finishes what the killed one started: the session it registered.
        consumer = bench.start();
        await waitFor(() => (bench.consumer()?.state === 'running' && sessionId(bench) !== sid ? true : null), { what: `a session after ${sid}` });
      }
      const spooled = await expectEachReplacementOnce(bench, sent, closed[0]!, consumer);
      expect(spooled.map((t) => t.from_session)).toEqual(closed);
      for (const t of spooled) expect(t.reason).toBe('session_closed_by_operator');
      // Some kills landed inside the window (spooled, not yet recorded), the case this test is for.
      expect(inWindow, 'kills between the spooled transition and session.json').toBeGreaterThan(0);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('what a kill in that window leaves: the spool names a session session.json does not yet', () => {
  it('the next connection adopts the session the spool names, and spools no second transition', async () => {
    const bench = await world.bench();
    const { a, b } = await killedAfterSpooling(bench);
    bench.start();
    await waitFor(() => (bench.consumer()?.state === 'running' && sessionId(bench) === b ? true : null), { what: `${b} adopted` });
    expect(bench.session()!.history.map((h) => h.id)).toEqual([a]);
    expect(transitions(bench).map((t) => [t.from_session, t.to_session])).toEqual([[a, b]]);
  });

  it('a session the spool names that a human closed too before the next connection is a second replacement: spooled from it', async () => {
    const bench = await world.bench();
    const { a, b } = await killedAfterSpooling(bench);
    const human = { token: world.hub.humanToken };
    expect((await hubCall(world.hub, 'POST', `/v1/sessions/${b}/operator-close`, { ...human, body: {} })).status).toBe(200);
    expect((await hubCall(world.hub, 'POST', '/v1/operator-stops/lift', { ...human, body: { agent_id: bench.me.id } })).status).toBe(200);
    bench.start();
    await waitFor(() => (bench.consumer()?.state === 'running' && ![a, b].includes(sessionId(bench)) ? true : null), { what: `a session after ${b}` });
    const c = sessionId(bench);
    expect(bench.session()!.history.map((h) => [h.id, h.reason])).toEqual([
      [a, 'session_closed_by_operator'],
      [b, 'session_closed_by_operator'],
    ]);
    expect(transitions(bench).map((t) => [t.from_session, t.to_session, t.reason])).toEqual([
      [a, b, 'session_closed_by_operator'],
      [b, c, 'session_closed_by_operator'],
    ]);
  });

  it('the same after oh-hai session close: the session the spool names replaces the stood-down one, which is then forgotten', async () => {
    const bench = await world.bench();
    const { a, b } = await killedAfterSpooling(bench, 'stood_down');
    bench.start();
    await waitFor(() => (bench.consumer()?.state === 'running' && bench.session()?.id === b ? true : null), { what: `${b} adopted` });
    expect(bench.session()!.history.map((h) => [h.id, h.reason])).toEqual([[a, 'session_closed']]);
    expect(transitions(bench).map((t) => [t.from_session, t.to_session])).toEqual([[a, b]]);
    expect(bench.read('stood-down.json')).toBeNull();
  });
});
