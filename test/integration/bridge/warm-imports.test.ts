import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, repoRoot, runOhHai, type RunResult } from '../../helpers/cli.js';
import { HUB, message, stage, type Stage } from './stage.js';

/**
 * The warm path (a connection running, records waiting) loads only what it needs: every
 * module costs a run start-up time (docs/performance.md), and the bridge must never pay for
 * the network stack, the Hub server, the lock library or other commands. bin/oh-hai runs the
 * bridge's bundle, so the module graph is checked on tsc's one-file-per-module build (the
 * bundle keeps its lazy boundaries: a module runs when it would have been imported), and the
 * launched bundle is checked for the packages and Node built-ins it loads.
 */
const preload = path.join(path.dirname(fileURLToPath(import.meta.url)), 'record-loads.mjs');

/**
 * Loaded files as paths: ours relative to the checkout (`dist/…`), packages from their
 * `node_modules/` on (a linked node_modules resolves outside the checkout).
 */
function shortName(file: string): string {
  const ours = path.relative(realpathSync(repoRoot), file);
  if (!ours.startsWith('..')) return ours.split(path.sep).join('/');
  const pkg = file.split(path.sep).join('/').lastIndexOf('/node_modules/');
  return pkg === -1
    ? file
    : file
        .split(path.sep)
        .join('/')
        .slice(pkg + 1);
}

/** The files a bundle in dist/ holds: esbuild writes a comment line naming each before its code. */
function bundledModules(file: string): string[] {
  return readFileSync(path.join(repoRoot, 'dist', file), 'latin1')
    .split('\n')
    .filter((l) => /^\/\/ \S+\.c?js$/.test(l))
    .map((l) => l.slice(3));
}

let st: Stage | null = null;
afterEach(() => {
  st?.cleanup();
  st = null;
});

/** The installed command: package.json's `bin`. */
const installedCommand = (): string => {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(repoRoot, pkg.bin['oh-hai']!);
};

/** `oh-hai bridge --wait 0` from tsc's modules (`node dist/cli/main.js`), through bin/oh-hai, or as the installed command runs it (the bundle both). */
function bridgeRun(s: Stage, via: 'modules' | 'bin' | 'installed', log: string): Promise<RunResult> {
  const env = { ...s.env, NODE_OPTIONS: `--import=${preload}`, OH_HAI_TEST_LOAD_LOG: log };
  if (via === 'bin') return runOhHai(['bridge', '--wait', '0'], { env });
  const main = via === 'installed' ? installedCommand() : path.join(repoRoot, 'dist', 'cli', 'main.js');
  const child = spawn(process.execPath, [main, 'bridge', '--wait', '0'], {
    env,
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collect(child);
}

async function warmRun(s: Stage, via: 'modules' | 'bin' | 'installed' = 'modules'): Promise<string[]> {
  const log = path.join(s.temp.root, 'loads.txt');
  s.stateDir.writeCursor({ seq: 0, offset: 0 });
  const r = await bridgeRun(s, via, log);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout.trimEnd().split('\n')).toHaveLength(2);
  expect(r.stderr).toContain('adopting the running background connection');
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith('file:') || u.startsWith('builtin:'))
    .map((u) => (u.startsWith('file:') ? shortName(fileURLToPath(u)) : u));
}

/** The log works: the bridge's own modules are in it (CommonJS ones too: smol-toml below). */
function expectModulesLogged(loaded: string[]): void {
  expect(loaded).toContain('dist/cli/commands/bridge/run.js');
}

const NEVER = [
  // commander too: the plain re-run is parsed by src/cli/bridge-options.ts.
  /^node_modules\/(undici|eventsource-parser|better-sqlite3|proper-lockfile|graceful-fs|commander)\//,
  /^dist\/hub\/(server|client)\//,
  /^dist\/spawn\//,
  /^dist\/cli\/man\//,
  // Other command groups: neither their registration nor their run modules.
  /^dist\/cli\/commands\/(?!bridge\/|index\.js$)/,
];

describe('the warm path loads only what it needs', () => {
  it('adopting a running connection loads no network stack, Hub server, lock library, argument parser, spawn code or other command', async () => {
    st = stage();
    st.consumerRunning();
    st.append([message('one'), message('two')]);
    const loaded = await warmRun(st);
    expectModulesLogged(loaded);
    for (const never of NEVER)
      expect(
        loaded.filter((m) => never.test(m)),
        String(never),
      ).toEqual([]);
    // No config file: the TOML parser is never loaded.
    expect(loaded.filter((m) => m.includes('smol-toml'))).toEqual([]);
  });

  it('with a config file it loads the TOML parser, and still nothing on the never list', async () => {
    st = stage();
    st.consumerRunning();
    st.append([message('one'), message('two')]);
    const configDir = path.join(st.env.XDG_CONFIG_HOME!, 'oh-hai');
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(configDir, 'config.toml'), `[hub]\nurl = "${HUB}"\n`, { mode: 0o600 });
    const loaded = await warmRun(st);
    expectModulesLogged(loaded);
    expect(loaded.filter((m) => m.includes('smol-toml')).length).toBeGreaterThan(0);
    for (const never of NEVER)
      expect(
        loaded.filter((m) => never.test(m)),
        String(never),
      ).toEqual([]);
  });

  it('bin/oh-hai runs the bridge bundle through the launcher', async () => {
    st = stage();
    st.consumerRunning();
    st.append([message('one'), message('two')]);
    const loaded = await warmRun(st, 'bin');
    expect(new Set(loaded.filter((m) => /^(bin|dist|node_modules)\//.test(m)))).toEqual(new Set(['bin/oh-hai', 'dist/cli/launch.cjs']));
  });

  it('the installed command is the launcher itself and runs the bridge bundle, which loads no package from node_modules and none of the costly built-ins', async () => {
    st = stage();
    st.consumerRunning();
    st.append([message('one'), message('two')]);
    const loaded = await warmRun(st, 'installed');
    // The bundle ran (it is compiled through vm.Script, so only the launcher shows as a file):
    // not tsc's modules, which the launcher falls back to when the bundle is missing or stale.
    // And the launcher is the main module, not a second file loaded by another
    // (docs/performance.md "Warm bridge (session 13)": ~1.1 M instructions).
    expect(new Set(loaded.filter((m) => /^(bin|dist|node_modules)\//.test(m)))).toEqual(new Set(['dist/cli/launch.cjs']));
    expect(loaded).toContain('builtin:vm');
    // crypto and child_process cost ~2.5 and ~1 ms to load; perf_hooks and the fs/promises +
    // readline pair come from a careless performance.now() or { ...fs }. zlib loads most of
    // stream (~8 M instructions): the spool lines' CRC-32 is a WebAssembly loop (src/util/crc32.ts).
    // tty loads net and most of stream (~4 M instructions): on pipes, as here, isatty is an fstat.
    // os (~0.9 M) only for the host name, which Linux gives in /proc (src/spool/process.ts).
    const os = process.platform === 'linux' ? ['os'] : [];
    for (const b of ['crypto', 'child_process', 'perf_hooks', 'internal/fs/promises', 'readline', 'tty', 'net', 'zlib', 'stream', ...os]) {
      expect(loaded, b).not.toContain(`builtin:${b}`);
    }
  });

  it("the bridge's bundle holds its plain run only: no argument parser, no command registration, no doctor, no lock library or SSE parser", () => {
    // What a run never reaches still costs it its share of the code cache (docs/performance.md
    // "Warm bridge (session 12)"); help, retired subcommands and usage errors run dist/oh-hai.cjs
    // (src/cli/launch.cts).
    const modules = bundledModules('bridge.cjs');
    expect(modules).toContain('dist/reader/printer.js');
    expect(
      modules.filter((m) =>
        /node_modules\/(commander|proper-lockfile|graceful-fs|eventsource-parser)\/|dist\/cli\/doctor\/|dist\/cli\/commands\/[^/]+\/register\.js$/.test(m),
      ),
    ).toEqual([]);
  });

  it("what only a cold run reaches (Hub client, agent directory, double fork, 0.9-home adoption) is in the bridge's cold file, not its bundle", () => {
    // docs/performance.md "Warm bridge (session 13)": ~1.2 M instructions of every warm run.
    const cold = /^dist\/(hub\/client\/|spawn\/|cli\/messaging\/|cli\/resolve\/adopt-legacy\.js$)/;
    expect(bundledModules('bridge.cjs').filter((m) => cold.test(m))).toEqual([]);
    expect(bundledModules('bridge-cold.cjs')).toEqual(
      expect.arrayContaining(['dist/hub/client/hub-client.js', 'dist/cli/messaging/directory.js', 'dist/spawn/index.js', 'dist/cli/resolve/adopt-legacy.js']),
    );
  });

  it('a warm run through the launcher never loads node:module (on Node 24 it brings its source-map code)', async () => {
    st = stage();
    st.consumerRunning();
    st.append([message('one')]);
    st.stateDir.writeCursor({ seq: 0, offset: 0 });
    // A CommonJS main file of its own: the preload above, and `node -e`, load node:module themselves.
    const probe = path.join(st.temp.root, 'probe.cjs');
    const launcher = path.join(repoRoot, 'dist', 'cli', 'launch.cjs');
    writeFileSync(
      probe,
      "process.on('exit', () => process.stderr.write('loaded: ' + process.moduleLoadList.filter((m) => m === 'NativeModule module').length + '\\n'));\n" +
        `require(${JSON.stringify(launcher)}).launch();\n`,
    );
    const r = await collect(spawn(process.execPath, [probe, 'bridge', '--wait', '0'], { env: st.env, cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] }));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('adopting the running background connection');
    expect(r.stderr).toContain('loaded: 0\n');
  });
});
