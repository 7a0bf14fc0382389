import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteDriverAvailable } from '../../src/hub/server/sqlite-driver.js';
import { collect, repoRoot } from '../helpers/cli.js';
import { tempEnv, type TempEnv } from '../helpers/env.js';

// What `npm install -g oh-hai` gives a user on a machine with no build tools: the packed
// tarball installed into an empty prefix with no C compiler, make or Python on PATH, then
// `oh-hai demo` end to end (its Hub on node:sqlite). One registry install per CI run: the
// Node 24 line runs it (.ci/run); on a Node without node:sqlite there is no SQLite for the
// demo without a compiler, so there it says why it does not run.

const noNodeSqlite = sqliteDriverAvailable('node');
const why = noNodeSqlite.ok ? null : `Node ${process.version} has no usable node:sqlite (${noNodeSqlite.reason}); the install test runs on the Node 24 CI line`;
if (why) console.warn(`packed-tarball install test SKIPPED: ${why}`);

/** The build tools a native addon would need; none may be reachable from the install's PATH. */
const BUILD_TOOLS = ['cc', 'gcc', 'g++', 'c++', 'clang', 'make', 'python3', 'python'];

describe.skipIf(why !== null)('the packed tarball, installed with no compiler on PATH', () => {
  let t: TempEnv | undefined;
  afterAll(() => t?.cleanup());

  it('packs bin, dist and man only; installs into an empty prefix on this Node; runs oh-hai demo end to end', async () => {
    t = tempEnv();
    const npmCli = path.join(spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout.trim(), 'npm', 'bin', 'npm-cli.js');
    expect(existsSync(npmCli), `npm's CLI at ${npmCli}`).toBe(true);

    // Packed as built: dist/ ships in the tarball, so nothing is built at install time.
    const packDir = path.join(t.root, 'pack');
    mkdirSync(packDir);
    const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], { cwd: repoRoot, encoding: 'utf8' });
    expect(pack.status, pack.stderr).toBe(0);
    const [packed] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    const files = packed!.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'bin/oh-hai', 'dist/oh-hai.cjs', 'dist/bridge.cjs', 'dist/cli/launch.cjs', 'man/oh-hai.1']),
    );
    expect(files.filter((f) => !/^(bin|dist|man)\//.test(f) && !['package.json', 'README.md'].includes(f))).toEqual([]);
    const tarball = path.join(packDir, packed!.filename);

    // A PATH with node and the shell's basics, and not one build tool.
    const tools = path.join(t.root, 'tools');
    mkdirSync(tools);
    symlinkSync(process.execPath, path.join(tools, 'node'));
    for (const tool of ['sh', 'bash', 'env', 'uname', 'rm', 'mkdir', 'cat', 'tar', 'gzip']) {
      const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      if (found) symlinkSync(found, path.join(tools, tool));
    }
    const reachable = BUILD_TOOLS.filter((tool) => spawnSync('bash', ['-c', `command -v ${tool}`], { env: { PATH: tools }, encoding: 'utf8' }).status === 0);
    expect(reachable, 'build tools reachable from the install PATH').toEqual([]);

    const prefix = path.join(t.root, 'prefix');
    const nodeDir = path.dirname(path.dirname(process.execPath));
    const env: NodeJS.ProcessEnv = {
      // The machine's own settings (its CA bundle, a proxy) reach npm; PATH and HOME do not.
      ...process.env,
      ...t.env,
      PATH: tools,
      npm_config_userconfig: process.env.npm_config_userconfig ?? path.join(os.homedir(), '.npmrc'),
      npm_config_cache: process.env.npm_config_cache ?? path.join(os.homedir(), '.npm'),
      npm_config_prefer_offline: 'true',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      npm_config_update_notifier: 'false',
      // Were anything to build, its headers would be this Node's own (they ship in its package).
      ...(existsSync(path.join(nodeDir, 'include', 'node')) ? { npm_config_nodedir: nodeDir } : {}),
    };
    const install = await collect(
      spawn(process.execPath, [npmCli, 'install', '-g', '--prefix', prefix, tarball], { env, stdio: ['ignore', 'pipe', 'pipe'] }),
      600_000,
    );
    expect(install.code, `${install.stderr}\n${install.stdout}`).toBe(0);
    const bin = path.join(prefix, 'bin', 'oh-hai');
    expect(existsSync(bin)).toBe(true);
    expect(readdirSync(path.join(prefix, 'share', 'man', 'man1'))).toContain('oh-hai.1');

    const demo = await collect(
      spawn(bin, ['demo'], { env: { ...t.env, PATH: `${path.join(prefix, 'bin')}:${tools}` }, stdio: ['ignore', 'pipe', 'pipe'] }),
      180_000,
    );
    expect(demo.code, `${demo.stderr}\n${demo.stdout}`).toBe(0);
    expect(demo.stdout).toMatch(/^\[mail 1\] notify from agent:agt_\S+ \(msg_\S+\) · notify: no reply expected · .*"Hello from alice/m);
    expect(demo.stdout).toContain('queued → delivered → acknowledged');
  }, 900_000);
});

// `npm publish` takes exactly what `npm pack` makes; these are the manifest's parts a
// registry install depends on, checked on every line (no registry needed).
describe('the manifest npm publishes', () => {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    private?: boolean;
    engines?: { node?: string };
    bin?: Record<string, string>;
    man?: string[];
    files?: string[];
  };

  it('is publishable, names the supported Node lines, and every bin and man entry it lists exists', () => {
    expect(pkg.private, '"private": true makes `npm publish` refuse').toBeUndefined();
    expect(pkg.engines?.node).toBe('>=20.18.1');
    expect(pkg.bin).toEqual({ 'oh-hai': 'dist/cli/launch.cjs' });
    expect(pkg.files).toEqual(['bin', 'dist', 'man']);
    for (const f of [...Object.values(pkg.bin ?? {}), ...(pkg.man ?? [])]) expect(existsSync(path.join(repoRoot, f)), f).toBe(true);
    expect(pkg.man?.length).toBeGreaterThan(0);
  });
});
