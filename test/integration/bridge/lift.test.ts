import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spoolTransition } from '../../helpers/spool.js';
import { runOhHai, type RunResult } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';
import { bridge, consumerOf, directive, hubCall, registered, sessionIdOf, startBridge, stateDirOf, useBridgeWorld, type Agent } from './world.js';

/**
 * The operator kill-switch and its lift, end to end: a human closes the session with
 * `oh-hai hub session close` (exit 14 while the Hub refuses), lifts it with `oh-hai hub lift`,
 * and the agent's next `oh-hai bridge` registers a new session by itself — a new address,
 * said as a transition — with nothing printed before the close printed again.
 */
const world = useBridgeWorld();

const admin = (a: Agent, ...args: string[]) => runOhHai(['hub', ...args, '--data', world.hub.dataDir], { env: a.env });
const address = (a: Agent, sess: string) => `agent:${a.id}#${sess}`;

/**
 * The session the connection registers after `old`, once session.json names it; refused when the
 * run ends without one. A run that prints at once can end between two polls: session.json is read
 * once more when it ends.
 */
const replacedBy = (dir: string, old: string, run: Promise<RunResult>): Promise<string> => {
  const successor = (): string | null => {
    const id = sessionIdOf(dir);
    return id !== null && id !== old ? id : null;
  };
  return Promise.race([
    waitFor(successor, { timeoutMs: 40_000, what: `a session replacing ${old}` }),
    run.then((r) => successor() ?? Promise.reject(new Error(`the run ended (exit ${r.code}) before a session replaced ${old}:\n${r.stderr}`))),
  ]);
};

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const TRANSITION = (a: Agent, from: string, to: string, seq: number) =>
  `[mail ${seq}] address changed (session_closed_by_operator): ${address(a, from)} → ${address(a, to)} · a human closed the old session (the operator kill-switch) ` +
  `and has since lifted the stop, so the connection registered this new one · mail to the old address bounces; peers need the new one\n`;

/**
 * A new agent whose connection, started by a `--wait 0` run under `name`, a human stopped with
 * the kill-switch (14, relayed by no run) and then lifted the stop.
 */
async function stoppedAndLifted(name: string): Promise<{ a: Agent; dir: string; sess: string }> {
  const a = await world.agent();
  const dir = stateDirOf(a, world.hub, name);
  expect((await bridge(a, name, ['--wait', '0'])).code).toBe(0);
  const sess = await registered(dir);
  expect((await admin(a, 'session', 'close', sess)).code).toBe(0);
  await waitFor(() => (consumerOf(dir)?.state === 'stopped' ? consumerOf(dir) : null), { what: 'the connection to stop on the kill-switch' });
  expect(consumerOf(dir)?.exit_code).toBe(14);
  expect((await admin(a, 'lift', '--agent', a.id)).code).toBe(0);
  return { a, dir, sess };
}

describe('oh-hai bridge after the operator kill-switch is lifted', () => {
  it('exits 14 while the Hub refuses; after the lift the next run registers anew and prints new mail, nothing twice', async () => {
    const a = await world.agent();
    const dir = stateDirOf(a, world.hub, 'lifted');
    const first = startBridge(a, 'lifted', ['--wait', '30']);
    const sess = await registered(dir);
    await directive(world.hub, address(a, sess), 'before the close');
    const printed = await first.done;
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^\[mail 1\] directive .*"before the close"\n$/);

    const waiting = startBridge(a, 'lifted', ['--wait', '30']);
    let said = '';
    waiting.child.stderr?.on('data', (d: Buffer | string) => (said += String(d)));
    await waitFor(() => said.includes('adopting the running background connection'), { what: 'the second run to attend the connection' });
    const closed = await admin(a, 'session', 'close', sess);
    expect(closed.code, closed.stderr).toBe(0);
    const stopped = await waiting.done;
    expect(stopped.code).toBe(14);
    expect(stopped.stdout).toBe('');

    // Before the lift: the Hub still refuses, so the run stops again, and nothing is registered.
    const refused = await bridge(a, 'lifted', ['--wait', '5']);
    expect(refused.code).toBe(14);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(
      /FATAL \(exit 14, session_closed_by_operator\) — .*do not re-run and do not start a replacement session until a human lifts the stop/,
    );
    expect(sessionIdOf(dir)).toBe(sess);

    const lifted = await admin(a, 'lift', '--agent', a.id);
    expect(lifted.code, lifted.stderr).toBe(0);
    expect(lifted.stdout).toMatch(/lifted 1 operator stop/);
    expect(lifted.stdout).toContain('its next oh-hai bridge registers a new session');
    // Sent to the agent while no session of it runs: the new session claims it.
    await directive(world.hub, `agent:${a.id}`, 'to the agent');

    const back = startBridge(a, 'lifted', ['--wait', '30']);
    const next = await replacedBy(dir, sess, back.done);
    const r = await back.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/FATAL/);
    expect(r.stdout).toMatch(new RegExp(`^${escapeRe(TRANSITION(a, sess, next, 2))}\\[mail 3\\] directive .*"to the agent"\\n$`));

    await directive(world.hub, address(a, next), 'to the new address');
    const later = await bridge(a, 'lifted', ['--wait', '30']);
    expect(later.code, later.stderr).toBe(0);
    expect(later.stdout).toMatch(/^\[mail 4\] directive .*"to the new address"\n$/);
  });

  it('a kill-switch stop no run relayed yet is not relayed after the lift: the Hub decides', async () => {
    const { a, dir, sess } = await stoppedAndLifted('unrelayed');

    const back = startBridge(a, 'unrelayed', ['--wait', '30']);
    const next = await replacedBy(dir, sess, back.done);
    await directive(world.hub, address(a, next), 'after the lift');
    const r = await back.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${escapeRe(TRANSITION(a, sess, next, 1))}\\[mail 2\\] directive .*"after the lift"\\n$`));
  });

  it('a connection killed after spooling the address change and before recording it: the change is printed once', async () => {
    const { a, dir, sess } = await stoppedAndLifted('killed');
    // What a kill leaves between the two writes: the new session registered and its transition
    // spooled, session.json still naming the closed one (test/integration/consumer/lift-kill.test.ts kills there).
    const { name } = JSON.parse(readFileSync(path.join(dir, 'settings.json'), 'utf8')) as { name: string | null };
    const created = await hubCall(world.hub, a.token, 'POST', '/v1/sessions', { client_key: path.basename(dir), name });
    expect(created.status).toBe(201);
    const next = (created.json as { session: { id: string } }).session.id;
    spoolTransition(dir, {
      from_session: sess,
      to_session: next,
      from_address: address(a, sess),
      to_address: address(a, next),
      reason: 'session_closed_by_operator',
    });
    await directive(world.hub, address(a, next), 'after the kill');

    let printed = '';
    for (let run = 0; run < 3 && !printed.includes('"after the kill"'); run += 1) {
      const r = await bridge(a, 'killed', ['--wait', '30']);
      expect(r.code, r.stderr).toBe(0);
      printed += r.stdout;
    }
    expect(printed).toMatch(new RegExp(`^${escapeRe(TRANSITION(a, sess, next, 1))}\\[mail 2\\] directive .*"after the kill"\\n$`));
    expect(sessionIdOf(dir)).toBe(next);
  });
});
