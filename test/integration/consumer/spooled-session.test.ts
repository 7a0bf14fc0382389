import { unlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { FAST_HUB, hubCall, useBenches, waitFor, type Bench } from './harness.js';
import { spoolTransition } from '../../helpers/spool.js';
import { killAndWait } from '../../helpers/process.js';
import { exited } from './harness.js';
import { killedAfterSpooling, sessionId } from './transition-kill.js';

/**
 * The commands in the state a kill leaves between spooling an address change and recording
 * the session it names (session.json still naming the ended session, or stood-down.json after
 * oh-hai session close), with no connection running: they take the session the spool names,
 * as the next connection does (docs/consumer.md "The session").
 */
const world = useBenches({ args: FAST_HUB }, { logTail: 80 });

/** `oh-hai <args>` as this bench's agent session. */
const cli = (bench: Bench, args: string[]) => runOhHai(args, { env: { ...bench.env, MA2H_HUB_URL: bench.hub.url, MA2H_AGENT_SESSION_ID: 'test-session' } });

const hubState = async (bench: Bench, id: string): Promise<string> =>
  ((await hubCall(bench.hub, 'GET', `/v1/sessions/${id}`, { token: bench.me.token })).body.session as { state: string }).state;

describe('a command in the window: the session is the one the spool names', () => {
  it.each(['by_operator', 'stood_down'] as const)(
    'A ended %s, A → B spooled: session close closes and forgets B, and the next connection replaces B rather than adopting it',
    async (ended) => {
      const bench = await world.bench();
      const { a, b } = await killedAfterSpooling(bench, ended);
      const closed = await cli(bench, ['session', 'close']);
      expect(closed.code, closed.stderr).toBe(0);
      expect(closed.stdout).toContain(`closed session ${b} `);
      expect(closed.stdout).toContain(`forgot ${b} locally`);
      expect(await hubState(bench, b)).toBe('closed');
      expect(bench.session(), 'session.json, a step behind, is forgotten with B').toBeNull();
      expect(
        bench
          .read<{ sessions: { id: string }[] }>('stood-down.json')!
          .sessions.map((s) => s.id)
          .at(-1),
      ).toBe(b);

      bench.start();
      await waitFor(() => (bench.consumer()?.state === 'running' && ![a, b].includes(sessionId(bench)) ? true : null), { what: `a session after ${b}` });
      const c = sessionId(bench);
      const transitions = bench.spool().filter((l) => l.type === 'transition');
      expect(transitions.map((t) => [t.from_session, t.to_session])).toEqual([
        [a, b],
        [b, c],
      ]);
    },
  );

  it('session status names the session the spool names, as the Hub has it', async () => {
    const bench = await world.bench();
    const { b } = await killedAfterSpooling(bench);
    const status = await cli(bench, ['session', 'status', '--json']);
    expect(status.code, status.stderr).toBe(0);
    const view = JSON.parse(status.stdout) as { session_id: string; hub: { id: string; state: string } | null; local: { record: unknown } | null };
    expect(view.session_id).toBe(b);
    expect(view.hub).toMatchObject({ id: b, state: 'active' });
    expect(view.local?.record, "session.json records the ended session, not B's").toBeNull();
    const text = await cli(bench, ['session', 'status']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(new RegExp(`^session ${b} · `));
  });

  it("doctor's bridge session check asks the Hub about the session the spool names, not the ended one", async () => {
    const bench = await world.bench();
    const { a, b } = await killedAfterSpooling(bench);
    const run = await cli(bench, ['doctor', '--self-test', '--json']);
    const checks = (JSON.parse(run.stdout) as { checks: { name: string; status: string; detail: string; measured: Record<string, unknown> }[] }).checks;
    const session = checks.find((c) => c.name === 'bridge session')!;
    expect(session, run.stdout).toMatchObject({ status: 'pass', measured: expect.objectContaining({ session: b, state: 'active' }) });
    expect(session.detail).toContain(`session.json still names ${a}, which the spool says ${b} replaced`);
  });

  it("the bridge's lease epilogue names the session the spool names while the next connection has not recorded it", async () => {
    // A Hub of its own: this test stops it.
    const bench = await world.bench({ on: await world.ownHub({ args: FAST_HUB }) });
    bench.settings();
    bench.attend();
    const consumer = bench.start();
    await bench.waitRunning();
    const { id: a, address } = bench.session()!;
    // Killed between spooling A → B and recording B, as transition-kill.ts's kills land.
    consumer.kill('SIGKILL');
    await exited(consumer);
    expect((await hubCall(bench.hub, 'POST', `/v1/sessions/${a}/close`, { token: bench.me.token, body: {} })).status).toBe(200);
    const created = await hubCall(bench.hub, 'POST', '/v1/sessions', { token: bench.me.token, body: { client_key: 'test-session', name: 'builder-1' } });
    expect(created.status).toBe(201);
    const b = created.body.session as { id: string; address: string };
    spoolTransition(bench.dir, { from_session: a, to_session: b.id, from_address: address, to_address: b.address, reason: 'session_lapsed' });
    // With the Hub away the next connection cannot take B up, so session.json names A throughout the run.
    await bench.hub.stop();
    // The reader record attend() wrote names this test process: a bridge run would displace it (SIGTERM).
    unlinkSync(path.join(bench.dir, 'reader.json'));
    const run = await cli(bench, ['bridge', '--raw', '--wait', '0']);
    // The connection the run started retries the Hub that is gone: it is not the bench's to stop.
    const started = await waitFor(() => (bench.consumer()?.pid !== consumer.pid ? bench.consumer() : null), {
      what: 'the record of the connection the run started',
    });
    await killAndWait(started.pid);
    expect(run.code, run.stderr).toBe(0);
    expect(bench.session()?.id).toBe(a);
    const lease = run.stderr.split('\n').find((l) => l.startsWith('oh-hai bridge: lease — '));
    expect(lease, run.stderr).toMatch(
      new RegExp(
        `^oh-hai bridge: lease — ${b.id} \\(${b.address}\\), which replaced ${a} \\d+\\S* ago \\(session_lapsed\\); no renewal of it is recorded here yet`,
      ),
    );
    expect(run.stderr).not.toContain(`lease — ${a}`);

    // session status, with the Hub back and no connection running, says the same.
    await bench.hub.restart();
    const status = await cli(bench, ['session', 'status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout.split('\n')[0]).toMatch(new RegExp(`^session ${b.id} · `));
    expect(status.stdout).toContain(`lease — ${b.id} (${b.address}), which replaced ${a} `);
    expect(status.stdout).not.toContain(`lease — ${a}`);
  });
  it("after oh-hai session close removed session.json, the bridge's lease epilogue follows the spool past the stood-down session, as the commands do", async () => {
    // A Hub of its own: this test stops it.
    const bench = await world.bench({ on: await world.ownHub({ args: FAST_HUB }) });
    const { a, b } = await killedAfterSpooling(bench, 'stood_down');
    const attached = await cli(bench, ['session', 'status', '--json']);
    expect(attached.code, attached.stderr).toBe(0);
    expect((JSON.parse(attached.stdout) as { session_id: string }).session_id, 'the command attaches to B').toBe(b);
    const address = (JSON.parse(attached.stdout) as { hub: { address: string } }).hub.address;
    // With the Hub away the next connection cannot take B up, so session.json stays absent throughout the run.
    await bench.hub.stop();
    unlinkSync(path.join(bench.dir, 'reader.json'));
    const run = await cli(bench, ['bridge', '--raw', '--wait', '0']);
    const started = await waitFor(() => (bench.consumer()?.state !== 'stopped' && bench.consumer()?.retrying ? bench.consumer() : null), {
      what: 'the record of the connection the run started',
    });
    await killAndWait(started.pid);
    await bench.hub.restart();
    expect(run.code, run.stderr).toBe(0);
    expect(bench.session(), 'session.json stays absent').toBeNull();
    const lease = run.stderr.split('\n').find((l) => l.startsWith('oh-hai bridge: lease — '));
    expect(lease, run.stderr).toMatch(
      new RegExp(`^oh-hai bridge: lease — ${b} \\(${address}\\), which replaced ${a} \\d+\\S* ago \\(session_closed\\); no renewal of it is recorded here yet`),
    );
    expect(run.stderr).not.toContain('no session recorded');
    // session status, with the Hub back and no connection running, says the same.
    const status = await cli(bench, ['session', 'status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`lease — ${b} (${address}), which replaced ${a} `);
    expect(status.stdout).not.toContain('no session recorded');
  });
});
