import { describe, expect, it } from 'vitest';
import { listStateDirs } from '../../../src/spool/index.js';
import { collect } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';
import { as, BRIDGE, consumerPid, sessionOf, startBridge, stateDirOf, stopAll, useParties } from '../messaging/world.js';
import { consumerOf } from './world.js';

/**
 * The Hub going away under a waiting bridge (docs/bridge.md "When the Hub goes away"): the
 * run says so once when its connection starts retrying and once when it is connected again,
 * never once per attempt; a run that ends while the connection retries says so in its epilogue.
 */
const STARTS =
  /oh-hai bridge: the background connection cannot reach the Hub \(.+\)\. It is retrying with backoff \(attempt \d+ of 1000.*\) and this run keeps waiting/;
const BACK = /oh-hai bridge: the background connection reached the Hub again \(after \d+ failed attempts?( over \S+)?\); waiting for mail/;
const count = (text: string, line: RegExp): number => text.match(new RegExp(line.source, 'g'))?.length ?? 0;
/** Two failed attempts, the first over a second and a half ago: the epilogue says for how long from a second on. */
const retriedAWhile = (dir: string) =>
  waitFor(
    () => {
      const r = consumerOf(dir)?.retrying;
      return r !== undefined && r.attempt >= 2 && r.since !== null && Date.now() - r.since >= 1500;
    },
    { timeoutMs: 30_000, what: 'two failed attempts, the first 1.5 s ago' },
  );

describe('the Hub goes down while a bridge waits', () => {
  const world = useParties(['alice', 'bob', 'carol']);
  // Short delays, and a budget a slow restart cannot spend.
  const quick = { OH_HAI_BACKOFF_MIN_MS: '100', OH_HAI_BACKOFF_MAX_MS: '300', OH_HAI_MAX_RETRIES: '1000' };

  it('a waiting run says once that the connection lost the Hub and once that it is back, and then prints the mail', async () => {
    const bob = { ...world.bob, env: { ...world.bob.env, ...quick } };
    const child = startBridge(bob, 'bob-down', 600);
    const done = collect(child, 120_000);
    let stderr = '';
    child.stderr?.on('data', (d: string) => (stderr += d));
    try {
      const dir = stateDirOf(bob, world.hub, 'bob-down');
      const session = await waitFor(() => sessionOf(bob, world.hub, 'bob-down'), { timeoutMs: 40_000, what: 'the session to be registered' });
      await waitFor(() => consumerOf(dir)?.state === 'running' && consumerOf(dir)?.retrying === undefined, { what: 'the connection to be connected' });

      await world.hub.kill('SIGKILL');
      await waitFor(() => STARTS.test(stderr), { timeoutMs: 30_000, what: 'the line that the connection cannot reach the Hub' });
      // Several attempts pass while the Hub is down, and still only the one line.
      await waitFor(() => (consumerOf(dir)?.retrying?.attempt ?? 0) >= 3, { timeoutMs: 30_000, what: 'three failed attempts' });
      await world.hub.restart();
      await waitFor(() => BACK.test(stderr), { timeoutMs: 30_000, what: 'the line that the connection reached the Hub again' });

      const sent = await as(world.alice, null, ['send', '--to', session.address, 'after the outage']);
      expect(sent.code, sent.stderr).toBe(0);
      const r = await done;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('after the outage');
      expect(count(r.stderr, STARTS)).toBe(1);
      expect(count(r.stderr, BACK)).toBe(1);
      // The retries are bridge.log's, not the run's: no line per attempt reaches stderr.
      expect(r.stderr).not.toMatch(/retry \d+ of/);
      // The reason names the failure, and nothing in the record carries the credential.
      expect(r.stderr).not.toContain(bob.token);
      // Connected again at the end: the epilogue has no retry warning.
      expect(r.stderr).not.toContain('is retrying:');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await done.catch(() => undefined);
      if (world.hub.proc.exitCode !== null || world.hub.proc.signalCode !== null) await world.hub.restart();
      await stopAll(bob);
    }
  });

  it('a run whose wait ends while the connection retries says so in its epilogue, on stderr only under --raw', async () => {
    const bob = { ...world.bob, env: { ...world.bob.env, ...quick, OH_HAI_BACKOFF_MIN_MS: '2000', OH_HAI_BACKOFF_MAX_MS: '2000' } };
    const first = await as(bob, 'bob-wait', [...BRIDGE, '--wait', '0']);
    expect(first.code, first.stderr).toBe(0);
    const dir = stateDirOf(bob, world.hub, 'bob-wait');
    await waitFor(() => consumerOf(dir)?.state === 'running', { what: 'the connection to be connected' });
    await world.hub.kill('SIGKILL');
    try {
      await retriedAWhile(dir);
      const r = await as(bob, 'bob-wait', [...BRIDGE, '--raw', '--wait', '0.5']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('');
      // Adopted mid-outage: the line says for how long it has been failing.
      expect(r.stderr).toMatch(/cannot reach the Hub \(.+\)\. It is retrying with backoff \(attempt \d+ of 1000, failing since \S+ ago\)/);
      expect(r.stderr).toMatch(
        new RegExp(
          `oh-hai bridge: ⚠️ the background connection \\(pid ${consumerPid(dir)}\\) cannot reach the Hub and is retrying: .+ \\(attempt \\d+ of 1000, failing since \\S+ ago\\)`,
        ),
      );
      expect(r.stderr).toContain('if all 1000 attempts fail the connection stops with exit 13');
      expect(r.stderr).not.toContain(bob.token);
    } finally {
      await world.hub.restart();
      await stopAll(bob);
    }
  });

  it('inbox watch says the same: one line when its connection retries, and the epilogue of a run that ends meanwhile', async () => {
    // Carol: no receipts of her own waiting, so the run waits.
    const carol = { ...world.carol, env: { ...world.carol.env, ...quick, OH_HAI_BACKOFF_MIN_MS: '2000', OH_HAI_BACKOFF_MAX_MS: '2000' } };
    const WATCH = ['inbox', 'watch', '--allow-from', 'any-in-account'];
    const first = await as(carol, null, [...WATCH, '--wait', '0']);
    expect(first.code, first.stderr).toBe(0);
    const dir = await waitFor(() => listStateDirs(carol.stateRoot).find((l) => l.leg === 'principal' && consumerOf(l.dir)?.state === 'running')?.dir, {
      what: 'the principal connection to be connected',
    });
    await world.hub.kill('SIGKILL');
    try {
      await retriedAWhile(dir);
      const r = await as(carol, null, [...WATCH, '--wait', '0.5']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        /oh-hai inbox watch: the background connection cannot reach the Hub \(.+\)\. It is retrying with backoff \(attempt \d+ of 1000, failing since \S+ ago\)/,
      );
      expect(r.stderr).toMatch(
        new RegExp(
          `oh-hai inbox watch: ⚠️ the background connection \\(pid ${consumerPid(dir)}\\) cannot reach the Hub and is retrying: .+ \\(attempt \\d+ of 1000, failing since \\S+ ago\\)\\. Nothing is delivered meanwhile`,
        ),
      );
    } finally {
      await world.hub.restart();
      await stopAll(carol);
    }
  });
});
