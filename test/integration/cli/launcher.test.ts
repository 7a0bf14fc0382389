import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, repoRoot, runOhHai, startOhHai, type RunResult } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { waitFor } from '../../helpers/wait.js';
import { asleep } from '../bridge/proc.js';
import { message, stage } from '../bridge/stage.js';

/**
 * bin/oh-hai runs a bundle of the CLI through a V8 code cache (src/cli/launch.cts). The cache
 * is an optimisation only: whatever state it is in, the command's output and exit code are
 * the same, and a bundle that is missing or older than tsc's output is never run.
 */

let t: TempEnv | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

const cacheDir = (env: NodeJS.ProcessEnv): string => path.join(env.HOME!, '.cache', 'oh-hai', 'code-cache');
const caches = (env: NodeJS.ProcessEnv, label: string): string[] => {
  try {
    return readdirSync(cacheDir(env)).filter((n) => n.endsWith(`-${label}.v8`));
  } catch {
    return [];
  }
};

async function exitCodes(env: NodeJS.ProcessEnv): Promise<RunResult> {
  const r = await runOhHai(['bridge', '--exit-codes'], { env });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/^exit\tmeaning/);
  expect(r.stderr).toBe('');
  return r;
}

describe('the code cache', () => {
  it('is written by the first three runs, private, one per bundle, and reused untouched after', async () => {
    t = tempEnv();
    const first = await exitCodes(t.env);
    const [bridge] = caches(t.env, 'bridge');
    expect(bridge).toMatch(new RegExp(`^[0-9a-f]{32}-${process.version}-${process.arch}-bridge\\.v8$`));
    const file = path.join(cacheDir(t.env), bridge!);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(cacheDir(t.env)).mode & 0o777).toBe(0o700);
    // Its first byte counts the runs that wrote it: each adds the functions it ran.
    expect(readFileSync(file)[0]).toBe(1);
    for (const writes of [2, 3]) {
      expect((await exitCodes(t.env)).stdout).toBe(first.stdout);
      expect(readFileSync(file)[0]).toBe(writes);
    }
    const before = statSync(file);
    // V8 accepted it and three runs wrote it: now it is only read.
    expect((await exitCodes(t.env)).stdout).toBe(first.stdout);
    const after = statSync(file);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    // Every other command shares the other bundle and its own cache, beside the bridge's.
    const v = await runOhHai(['--version'], { env: t.env });
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(caches(t.env, 'cli')).toHaveLength(1);
    expect(caches(t.env, 'bridge')).toEqual([bridge]);
  });

  it('of a reader woken after its early write is written once more as it exits, marked hot; a hot cache is left alone after', async () => {
    const st = stage();
    try {
      st.consumerRunning();
      const waiting = (): Promise<RunResult> => collect(startOhHai(['bridge', '--wait', '60'], { env: st.env }));
      // Waits past the early write (2 s in), as a reader waits for mail: that cache holds no wake.
      const first = waiting();
      await waitFor(() => caches(st.env, 'bridge').length === 1, { what: 'the waiting reader to write its code cache' });
      const file = path.join(cacheDir(st.env), caches(st.env, 'bridge')[0]!);
      const early = statSync(file);
      expect(readFileSync(file)[0]).toBe(1);
      st.append([message('the wake')]);
      const r = await first;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('the wake');
      // Rewritten (a new file renamed in) with the wake compiled: still one run's write, now hot.
      const hot = statSync(file);
      expect(hot.ino).not.toBe(early.ino);
      expect(readFileSync(file)[0]).toBe(0x81);
      // The next runs count on from it; none of them needs to say it is hot again.
      const second = waiting();
      await waitFor(() => readFileSync(file)[0] === 0x82, { what: 'the second reader to write its code cache' });
      st.append([message('the second wake')]);
      expect((await second).stdout).toContain('the second wake');
      expect(readFileSync(file)[0]).toBe(0x82);
    } finally {
      st.cleanup();
    }
  });

  it('finished by runs that never woke is written once more, marked hot, by the first run that wakes and prints', async () => {
    const st = stage();
    try {
      st.consumerRunning();
      for (let i = 0; i < 3; i++) {
        const r = await runOhHai(['bridge', '--wait', '0'], { env: st.env });
        expect(r.code, r.stderr).toBe(0);
      }
      const file = path.join(cacheDir(st.env), caches(st.env, 'bridge')[0]!);
      expect(readFileSync(file)[0]).toBe(3);
      const finished = statSync(file);
      // A finished cache gets no early write and no exit listener until the run says its hot path ran.
      const child = startOhHai(['bridge', '--wait', '60'], { env: st.env });
      const waiting = collect(child);
      await waitFor(
        () => {
          const r = st.stateDir.read('reader');
          return r.state === 'ok' && r.value.pid === child.pid;
        },
        { what: 'the reader to claim the entry' },
      );
      await asleep(child.pid!);
      st.append([message('the wake')]);
      const r = await waiting;
      expect(r.stdout).toContain('the wake');
      expect(statSync(file).ino).not.toBe(finished.ino);
      expect(readFileSync(file)[0]).toBe(0x83);
    } finally {
      st.cleanup();
    }
  });

  it('that V8 refuses (garbage in the file) changes nothing the command prints, and is replaced', async () => {
    t = tempEnv();
    const clean = await exitCodes(t.env);
    const [bridge] = caches(t.env, 'bridge');
    const file = path.join(cacheDir(t.env), bridge!);
    // Garbage that claims three writes: refused by V8, so written again from the first.
    writeFileSync(file, Buffer.concat([Buffer.from([3]), Buffer.alloc(4096, 0x5a)]), { mode: 0o600 });
    expect((await exitCodes(t.env)).stdout).toBe(clean.stdout);
    expect(statSync(file).size).not.toBe(4097);
    expect(readFileSync(file)[0]).toBe(1);
  });

  it('is written while a long-running command still runs, not when a signal stops it', async () => {
    t = tempEnv();
    const hub = startOhHai(['hub', 'serve', '--port', '0', '--data', path.join(t.root, 'hub')], { env: t.env });
    const done = collect(hub);
    try {
      await waitFor(() => caches(t!.env, 'cli').length === 1, { what: 'the running Hub to write its code cache' });
      expect(hub.exitCode).toBeNull();
      const file = path.join(cacheDir(t.env), caches(t.env, 'cli')[0]!);
      const before = statSync(file);
      hub.kill('SIGTERM');
      await done;
      const after = statSync(file);
      expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    } finally {
      if (hub.exitCode === null) hub.kill('SIGKILL');
    }
  });

  it("written by another Node version, under this version's name, is refused by V8 and rewritten; the command prints the same", async () => {
    // A real cache of another Node line: CI keeps them in ~/.cache/oh-hai-ci (.ci/node-line.sh).
    const lines = path.join(process.env.OH_HAI_CI_CACHE ?? path.join(process.env.HOME ?? '/nonexistent', '.cache', 'oh-hai-ci'));
    const other = (existsSync(lines) ? readdirSync(lines) : [])
      .filter((d) => /^node-\d+\.\d+\.\d+$/.test(d) && `v${d.slice('node-'.length)}` !== process.version)
      .map((d) => path.join(lines, d, 'bin', 'node'))
      .find((n) => existsSync(n));
    if (other === undefined) {
      console.log(`SKIPPED: no other Node line in ${lines} (.ci/node-line.sh fetches one) to write a cache with`);
      return;
    }
    t = tempEnv();
    const foreign = await collect(
      spawn(other, [path.join(repoRoot, 'bin', 'oh-hai'), 'bridge', '--exit-codes'], { env: t.env, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    expect(foreign.code, foreign.stderr).toBe(0);
    const [written] = caches(t.env, 'bridge');
    expect(written).not.toContain(process.version);
    // Claims three writes, so only a refusal makes this run write it again.
    const mine = path.join(cacheDir(t.env), written!.replace(/-v\d+\.\d+\.\d+-/, `-${process.version}-`));
    writeFileSync(mine, Buffer.concat([Buffer.from([3]), readFileSync(path.join(cacheDir(t.env), written!)).subarray(1)]), { mode: 0o600 });
    const before = statSync(mine).size;
    expect((await exitCodes(t.env)).stdout).toBe(foreign.stdout);
    expect(readFileSync(mine)[0]).toBe(1);
    expect(statSync(mine).size).not.toBe(before);
  });

  it('of an earlier build of the same bundle is removed when the new one is written', async () => {
    t = tempEnv();
    mkdirSync(cacheDir(t.env), { recursive: true, mode: 0o700 });
    const stale = `${'0'.repeat(32)}-${process.version}-${process.arch}-bridge.v8`;
    const otherBundle = `${'0'.repeat(32)}-${process.version}-${process.arch}-cli.v8`;
    writeFileSync(path.join(cacheDir(t.env), stale), 'old');
    writeFileSync(path.join(cacheDir(t.env), otherBundle), 'old');
    await exitCodes(t.env);
    expect(caches(t.env, 'bridge')).toHaveLength(1);
    expect(caches(t.env, 'bridge')).not.toContain(stale);
    expect(caches(t.env, 'cli')).toEqual([otherBundle]);
  });

  it('is not written with OH_HAI_CODE_CACHE=0, nor where it cannot be, and the command runs the same', async () => {
    t = tempEnv();
    const clean = await exitCodes({ ...t.env, OH_HAI_CODE_CACHE: '0' });
    expect(existsSync(path.join(t.env.HOME!, '.cache'))).toBe(false);
    // XDG_CACHE_HOME names a file: no directory can be made below it.
    const blocked = path.join(t.root, 'not-a-dir');
    writeFileSync(blocked, '');
    expect((await exitCodes({ ...t.env, XDG_CACHE_HOME: blocked })).stdout).toBe(clean.stdout);
    expect((await exitCodes({ ...t.env, XDG_CACHE_HOME: path.join(t.root, 'xdg-cache') })).stdout).toBe(clean.stdout);
    expect(readdirSync(path.join(t.root, 'xdg-cache', 'oh-hai', 'code-cache'))).toHaveLength(1);
  });
});

describe("Node's compile cache (OH_HAI_CODE_CACHE=node)", () => {
  const nodeHasIt = typeof (Module as unknown as { enableCompileCache?: unknown }).enableCompileCache === 'function';

  it('runs the same command, cached by Node where it has a compile cache and by the launcher where it has none', async () => {
    t = tempEnv();
    if (!nodeHasIt) console.log(`Node ${process.version} has no module.enableCompileCache: OH_HAI_CODE_CACHE=node runs the launcher's own cache`);
    const clean = await exitCodes({ ...t.env, OH_HAI_CODE_CACHE: '0' });
    expect((await exitCodes({ ...t.env, OH_HAI_CODE_CACHE: 'node' })).stdout).toBe(clean.stdout);
    expect((await exitCodes({ ...t.env, OH_HAI_CODE_CACHE: 'node' })).stdout).toBe(clean.stdout);
    const nodeCache = path.join(t.env.HOME!, '.cache', 'oh-hai', 'compile-cache');
    expect(existsSync(nodeCache)).toBe(nodeHasIt);
    expect(caches(t.env, 'bridge')).toHaveLength(nodeHasIt ? 0 : 1);
  });
});

describe('a bundle that is not the latest build', () => {
  /** A copy of the built package, so its dist/ can be changed without touching the checkout's. */
  function packageCopy(root: string): string {
    const pkg = path.join(root, 'pkg');
    for (const part of ['bin', 'dist', 'package.json']) cpSync(path.join(repoRoot, part), path.join(pkg, part), { recursive: true, preserveTimestamps: true });
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(pkg, 'node_modules'));
    return pkg;
  }
  const version = (pkg: string, env: NodeJS.ProcessEnv): Promise<RunResult> =>
    collect(spawn(process.execPath, [path.join(pkg, 'bin', 'oh-hai'), '--version'], { env, stdio: ['ignore', 'pipe', 'pipe'] }));

  it('older than tsc’s output, or missing, is not run: tsc’s modules are (no cache is made for them)', async () => {
    t = tempEnv();
    const pkg = packageCopy(t.root);
    const bundled = await version(pkg, t.env);
    expect(bundled.code).toBe(0);
    expect(caches(t.env, 'cli')).toHaveLength(1);
    rmSync(cacheDir(t.env), { recursive: true });

    // A `tsc` run after the last bundle: the bundle no longer matches the modules.
    const later = new Date(Date.now() + 60_000);
    utimesSync(path.join(pkg, 'dist', 'cli', 'main.js'), later, later);
    const stale = await version(pkg, t.env);
    expect(stale).toMatchObject({ code: 0, stdout: bundled.stdout, stderr: '' });
    expect(caches(t.env, 'cli')).toEqual([]);

    rmSync(path.join(pkg, 'dist', 'oh-hai.cjs'));
    const missing = await version(pkg, t.env);
    expect(missing).toMatchObject({ code: 0, stdout: bundled.stdout, stderr: '' });
    expect(caches(t.env, 'cli')).toEqual([]);
  });
});
