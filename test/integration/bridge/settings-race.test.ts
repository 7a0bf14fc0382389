import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/util/sha256.js';
import { gone, killAndWait } from '../../helpers/process.js';
import { waitFor } from '../../helpers/wait.js';
import { consumerOf, startBridge, stateDirOf, useBridgeWorld } from './world.js';

/**
 * Two runs of one agent session within a connection's start-up (docs/bridge.md "One consumer
 * per entry"): the connection runs on the settings of the run that launched it, and a run whose
 * connection lost the entry says so and is held to the one that won. The interleaving is forced
 * with a gate (consumer-gate.cjs) that halts each connection before it takes the entry's lock.
 */

const world = useBridgeWorld();
const preload = path.join(path.dirname(fileURLToPath(import.meta.url)), 'consumer-gate.cjs');

const gatedEnv = (gate: string): NodeJS.ProcessEnv => ({ NODE_OPTIONS: `--require=${preload}`, OH_HAI_TEST_CONSUMER_GATE: gate });

/** The pid of a connection halted at the gate that is not one of `known`. */
const nextGated = (gate: string, known: number[]): Promise<number> =>
  waitFor(
    () =>
      readdirSync(gate)
        .filter((n) => n.startsWith('gated.'))
        .map((n) => Number(n.slice('gated.'.length)))
        .find((pid) => !known.includes(pid)),
    { what: 'a background connection to reach the gate' },
  );

const openGate = (gate: string, pid: number): void => writeFileSync(path.join(gate, `open.${pid}`), '');

const settingsFile = (dir: string): string => readFileSync(path.join(dir, 'settings.json'), 'utf8');

/** settings.json as another run with --allow-from any-in-account would write it for this entry. */
function anotherRunsSettings(dir: string): string {
  const id = JSON.parse(readFileSync(path.join(dir, 'identity.json'), 'utf8')) as Record<string, unknown>;
  const settings = {
    hub: id.hub,
    agent_id: id.agent_id,
    session_key: id.session_key,
    pinned: id.pinned,
    name: id.name,
    pin_candidate: null,
    transport: 'auto',
    interval_seconds: 5,
    max_retries: 8,
    unattended_max_seconds: 120,
    allow_from: ['any-in-account'],
    agent: null,
    leg: 'session',
  };
  return JSON.stringify(settings) + '\n';
}

const runningRecord = (dir: string, pid: number) =>
  waitFor(
    () => {
      const c = consumerOf(dir);
      return c?.pid === pid && c.state === 'running' ? c : null;
    },
    { timeoutMs: 40_000, what: `connection ${pid} to run` },
  );

describe('two runs within a connection start-up', () => {
  it('the connection runs on the settings its run handed it, not on a settings.json written before it took the lock', async () => {
    const a = await world.agent();
    const gate = world.tempDir('oh-hai-gate-');
    const dir = stateDirOf(a, world.hub, 'r');
    const run1 = startBridge(a, 'r', ['--wait', '0'], gatedEnv(gate));
    const pid = await nextGated(gate, []);
    writeFileSync(path.join(dir, 'settings.json'), anotherRunsSettings(dir), { mode: 0o600 });
    openGate(gate, pid);
    const r1 = await run1.done;
    expect(r1.code, r1.stderr).toBe(0);
    expect(r1.stderr).toContain(`started the background connection (pid ${pid})`);
    expect(r1.stderr).toContain('no sender policy is declared');
    const c = await runningRecord(dir, pid);
    expect(c.policy).toBeNull();
    expect(JSON.parse(settingsFile(dir)).allow_from).toBeNull();
    expect(sha256Hex(settingsFile(dir))).toBe(c.settings_digest);
  });

  /**
   * Run 1 launches a connection and ends before it has taken the entry (interrupted here; on its
   * own, when the start-up outlasts the run's bound); run 2, with `args`, finds no record and
   * launches another. Run 1's connection takes the entry first. Returns run 2's result and both pids.
   */
  async function lostRace(args: string[]) {
    const a = await world.agent();
    const gate = world.tempDir('oh-hai-gate-');
    const dir = stateDirOf(a, world.hub, 'r');
    const run1 = startBridge(a, 'r', ['--wait', '0'], gatedEnv(gate));
    const first = await nextGated(gate, []);
    run1.child.kill('SIGINT');
    await run1.done;
    const run2 = startBridge(a, 'r', args, gatedEnv(gate));
    const second = await nextGated(gate, [first]);
    openGate(gate, first);
    await runningRecord(dir, first);
    openGate(gate, second);
    return { r2: await run2.done, first, second, dir };
  }

  const lostLine = (first: number, second: number): string =>
    `another run started a background connection (pid ${first}) at the same time, and it took this entry; the one this run started (pid ${second}) stopped`;

  it('a run whose connection lost the entry to one started just before says so, and a named flag that one contradicts is exit 2', async () => {
    const { r2, first, second, dir } = await lostRace(['--wait', '1', '--allow-from', 'any-in-account']);
    expect(r2.code, r2.stderr).toBe(2);
    expect(r2.stderr).toContain(lostLine(first, second));
    expect(r2.stderr).toMatch(/disagrees with what you named: --allow-from asks for .+, but it enforces none declared/);
    expect(r2.stderr).not.toContain(`started the background connection (pid ${second})`);
    const c = consumerOf(dir)!;
    expect(c.pid).toBe(first);
    expect(c.policy).toBeNull();
    expect(JSON.parse(settingsFile(dir)).allow_from).toBeNull();
  });

  it('a flagless run whose connection lost the entry adopts the one that took it', async () => {
    const { r2, first, second } = await lostRace(['--wait', '0']);
    expect(r2.code, r2.stderr).toBe(0);
    expect(r2.stderr).toContain(lostLine(first, second));
    expect(r2.stderr).toContain(`adopting the running background connection (pid ${first} on `);
    expect(r2.stderr).not.toContain(`started the background connection (pid ${second})`);
    expect(r2.stderr).not.toContain('no sender policy is declared');
    expect(r2.stderr).toMatch(new RegExp(`consumer pid ${first} on \\S+\\.`));
  });

  it('a connection that holds the entry but has not recorded itself yet is not taken over for its dead predecessor', async () => {
    const a = await world.agent();
    const gate = world.tempDir('oh-hai-gate-');
    const dir = stateDirOf(a, world.hub, 'r');
    // A predecessor that stopped: its record names a process that is gone.
    const r0 = await startBridge(a, 'r', ['--wait', '0']).done;
    expect(r0.code, r0.stderr).toBe(0);
    const before = await waitFor(() => (consumerOf(dir)?.state === 'running' ? consumerOf(dir) : null), {
      timeoutMs: 40_000,
      what: 'the first connection to run',
    });
    await killAndWait(before.pid, 'SIGTERM');
    // Run 1's connection takes the entry's lock and is halted before its record; run 1 is interrupted meanwhile.
    const run1 = startBridge(a, 'r', ['--wait', '0'], { NODE_OPTIONS: `--require=${preload}`, OH_HAI_TEST_CONSUMER_LOCKED_GATE: gate });
    const first = await waitFor(
      () =>
        readdirSync(gate)
          .filter((n) => n.startsWith('locked.'))
          .map((n) => Number(n.slice('locked.'.length)))[0],
      { what: 'the background connection to hold the entry' },
    );
    run1.child.kill('SIGINT');
    await run1.done;
    expect(consumerOf(dir)?.pid).toBe(before.pid);
    // Run 2 finds the dead predecessor's record and launches a connection, which finds the lock held and waits for its holder.
    const run2 = startBridge(a, 'r', ['--wait', '0']);
    const log = (): string => readFileSync(path.join(dir, 'bridge.log'), 'utf8');
    await waitFor(() => log().includes('waiting for its holder, which is starting, to record itself') || null, {
      what: "run 2's connection to wait for the lock's holder",
    }).catch((e: Error) => {
      throw new Error(`${e.message}\nbridge.log:\n${log()}`);
    });
    openGate(gate, first);
    await runningRecord(dir, first);
    const r2 = await run2.done;
    expect(r2.code, r2.stderr).toBe(0);
    const second = Number(/the one this run started \(pid (\d+)\) stopped/.exec(r2.stderr)?.[1]);
    expect(second, r2.stderr).toBeGreaterThan(0);
    expect(r2.stderr).toContain(`adopting the running background connection (pid ${first} on `);
    await waitFor(() => gone(second) || null, { what: `connection ${second} to have stopped` });
    expect(log()).not.toContain('taking it over');
    expect(consumerOf(dir)?.pid).toBe(first);
  });
});
