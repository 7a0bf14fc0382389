#!/usr/bin/env node
/**
 * The installed `oh-hai` command (package.json `bin`; bin/oh-hai runs it from a checkout). The CLI ships twice in dist/: tsc's one file per module (what the
 * background connection and the double fork start, and what tests import) and bundled
 * CommonJS files of the same modules (scripts/bundle.mjs): dist/bridge.cjs for `oh-hai
 * bridge`, dist/oh-hai.cjs for everything else. The launcher runs the bundle for the command,
 * compiled through a V8 code cache kept in the user's cache directory, because an
 * agent re-runs `oh-hai bridge` after every exit and most of such a run is Node loading and
 * compiling our code, not doing the work (docs/performance.md). CommonJS because Node 20 can
 * hand a code cache only to a script, not to an ES module.
 *
 * Nothing here may change what the CLI does: a cache that cannot be read, written or trusted
 * is skipped, and a bundle older than tsc's output (a `tsc` run without the bundle step) is
 * not used at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

interface Bundle {
  file: string;
  /** Its text inside the CommonJS wrapper, as vm.Script compiles it. */
  wrapped: string;
  /** The content hash the bundler wrote on the first line: the cache is keyed on it (V8 only checks the length). */
  id: string;
}

/** dist/oh-hai.cjs and tsc's dist/cli/main.js: the whole CLI (src/cli/main.ts). */
interface CliEntry {
  main(outputs?: 'streams' | 'descriptors'): Promise<void>;
}

/** dist/bridge.cjs (src/cli/bridge-main.ts): the plain bridge run, or a hand-over to the whole CLI. */
interface BridgeEntry {
  main(fullCli: () => void): unknown;
}

const DIST = path.join(__dirname, '..');
const BUNDLES = { bridge: path.join(DIST, 'bridge.cjs'), cli: path.join(DIST, 'oh-hai.cjs') } as const;
const MODULES_MAIN = path.join(DIST, 'cli', 'main.js');
const ID_LINE = /\/\/ oh-hai bundle ([0-9a-f]{16,64})\n/y;
/**
 * A CommonJS wrapper's two halves (Module.wrap's), read into one buffer around the bundle: V8
 * then gets one flat string. Wrapping the read source made a second ~650 KB string for V8 to
 * flatten (a copy and young-generation space; ~0.8 M instructions of a warm run). Written out
 * rather than asked of node:module, which a run would load for it (with, on Node 24, its
 * source-map code): ~0.35 M instructions (docs/performance.md "Warm bridge (session 12)").
 */
const WRAP_HEAD = '(function (exports, require, module, __filename, __dirname) { ';
const WRAP_TAIL = '\n});';

/**
 * A cache holds the functions the run that wrote it compiled, and what a later run loads from
 * it goes into what it writes. So the cache is written by the first few runs, each adding what
 * it ran (the first bridge run may start a connection and print nothing; the next ones print),
 * and then left alone: writing costs a run a few milliseconds.
 */
const WRITES = 3;
/** A run still going after this writes its cache then, not at exit: a long-running command is stopped by a signal, often while its home is being removed. */
const EARLY_WRITE_MS = 2000;
/**
 * Where a run tells its launcher that the path a later run most wants compiled has just run (a
 * reader's wake: src/util/code-cache.ts, which names the same key). A reader waits longer than
 * EARLY_WRITE_MS for mail, so the cache it wrote then holds its start and its wait, never the
 * wake that prints; a run that says so writes the cache once more at exit, and a cache no such
 * run has written yet is written by the next run that says so, however many runs wrote it.
 */
export const HOT_PATH_RAN = Symbol.for('oh-hai.code-cache.hot-path-ran');
/** The high bit of a cache file's first byte: a run that had run its hot path wrote it. */
const HOT = 0x80;

export function launch(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): void {
  // The bridge's bundle holds its plain run only; anything else under `bridge` runs the whole
  // CLI's, writing as the bridge does (src/cli/bridge-main.ts).
  const bridge = commandLabel(argv) === 'bridge' ? (bundleExports('bridge', env) as BridgeEntry | null) : null;
  if (bridge !== null) void bridge.main(() => runCli(env, 'descriptors'));
  else runCli(env);
}

function runCli(env: NodeJS.ProcessEnv, outputs?: 'descriptors'): void {
  const cli = bundleExports('cli', env) as CliEntry | null;
  if (cli !== null) void cli.main(outputs);
  else void import(pathToFileURL(MODULES_MAIN).href).then((m: CliEntry) => m.main(outputs));
}

/** A bundle run (its top level) through the code cache: its exports, or null when the bundle is missing or stale. */
function bundleExports(label: keyof typeof BUNDLES, env: NodeJS.ProcessEnv): unknown {
  const bundle = readBundle(BUNDLES[label]);
  if (bundle === null) return null;
  if (env.OH_HAI_CODE_CACHE === 'node') {
    const required = requireWithCompileCache(env, bundle);
    if (required !== null) return required;
  }
  const file = env.OH_HAI_CODE_CACHE === '0' ? null : codeCacheFile(env, bundle.id, label);
  const cached = file === null ? undefined : readCache(file);
  const script = new vm.Script(bundle.wrapped, { filename: bundle.file, ...(cached ? { cachedData: cached.data } : {}) });
  const accepted = cached !== undefined && script.cachedDataRejected !== true;
  const writes = accepted ? cached.writes : 0;
  // What a hot run compiled is in what this run loaded, so in what it writes: the mark carries.
  let hot = accepted && cached.hot;
  if (file !== null && (writes < WRITES || !hot)) {
    // Late, so the cache holds every function this run compiled, not only the top level.
    let written = writes >= WRITES;
    const save = (): void => {
      if (!written) writeCache(file, script, bundle.id, Math.min(writes + 1, WRITES), hot);
      written = true;
    };
    // The exit listener only where there is something to write: a warm run of a finished cache
    // that is not yet hot (every run that printed without waiting) would otherwise compile
    // Node's once/removeListener code for a no-op (~0.3 M instructions on Node 20).
    let atExit = false;
    const saveAtExit = (): void => {
      if (!atExit) process.once('exit', save);
      atExit = true;
    };
    if (!written) {
      setTimeout(save, EARLY_WRITE_MS).unref();
      saveAtExit();
    }
    // Once per run: what the hot path compiled goes in at exit, also after an early write.
    (globalThis as Record<symbol, unknown>)[HOT_PATH_RAN] = (): void => {
      if (hot) return;
      hot = true;
      written = false;
      saveAtExit();
    };
  }
  const mod = { exports: {} };
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  // The launcher's own require: a bundle requires only built-ins and packages (scripts/bundle.mjs),
  // which resolve the same from dist/cli/ as from dist/.
  wrapper.call(mod.exports, mod.exports, require, mod, bundle.file, path.dirname(bundle.file));
  return mod.exports;
}

/** `module.enableCompileCache` (Node ≥ 22.1); absent from Node 20's types and runtime. */
type EnableCompileCache = (dir?: string) => unknown;

/**
 * `OH_HAI_CODE_CACHE=node`: Node's own compile cache (22.1+) instead of ours, the bundle
 * required as a plain CommonJS file, for measuring one against the other (bench/bridge-warm.mjs;
 * docs/performance.md says which won and why ours stays the default). Null where this Node has
 * no compile cache or no cache directory is known: the launcher's own cache runs then.
 */
function requireWithCompileCache(env: NodeJS.ProcessEnv, bundle: Bundle): unknown {
  const Module = process.getBuiltinModule('node:module');
  const enable = (Module as unknown as { enableCompileCache?: EnableCompileCache }).enableCompileCache;
  const dir = cacheRoot(env);
  if (typeof enable !== 'function' || dir === null) return null;
  enable(path.join(dir, 'oh-hai', 'compile-cache'));
  return Module.createRequire(bundle.file)(bundle.file) as unknown;
}

/** The bundle, unless it is missing or older than tsc's output (then it is not what was built last). */
function readBundle(file: string): Bundle | null {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const st = fs.fstatSync(fd);
      if (fs.statSync(MODULES_MAIN).mtimeMs > st.mtimeMs) return null;
      // ASCII by construction (scripts/bundle.mjs checks): latin1 is a copy, utf8 a decode.
      const end = WRAP_HEAD.length + st.size;
      const buf = Buffer.allocUnsafe(end + WRAP_TAIL.length);
      buf.write(WRAP_HEAD, 0, 'latin1');
      let at = WRAP_HEAD.length;
      for (let n = 1; at < end && n > 0; at += n) n = fs.readSync(fd, buf, at, end - at, at - WRAP_HEAD.length);
      buf.write(WRAP_TAIL, at, 'latin1');
      const wrapped = buf.toString('latin1', 0, at + WRAP_TAIL.length);
      ID_LINE.lastIndex = WRAP_HEAD.length;
      const id = ID_LINE.exec(wrapped)?.[1];
      return id === undefined ? null : { file, wrapped, id };
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/**
 * The bridge gets a bundle and a cache of its own: it is the command re-run all day, and a
 * cache written by whichever command ran first would hold that command's functions, not the
 * bridge's. The top-level command is the first operand, as program.ts reads it.
 */
export function commandLabel(argv: readonly string[]): keyof typeof BUNDLES {
  return argv.find((a) => !a.startsWith('-')) === 'bridge' ? 'bridge' : 'cli';
}

/** $XDG_CACHE_HOME/oh-hai/code-cache, else ~/.cache/…; null when neither is known (no cache then). */
export function codeCacheFile(env: NodeJS.ProcessEnv, bundleId: string, label: string): string | null {
  const root = cacheRoot(env);
  if (root === null) return null;
  return path.join(root, 'oh-hai', 'code-cache', `${bundleId}-${process.version}-${process.arch}-${label}.v8`);
}

function cacheRoot(env: NodeJS.ProcessEnv): string | null {
  const xdg = env.XDG_CACHE_HOME;
  return xdg && path.isAbsolute(xdg) ? xdg : env.HOME && path.isAbsolute(env.HOME) ? path.join(env.HOME, '.cache') : null;
}

interface CacheFile {
  /** How many runs wrote it. */
  writes: number;
  /** Whether one of them had run its hot path first ({@link HOT_PATH_RAN}). */
  hot: boolean;
  data: Buffer;
}

/** A cache file: one byte counting the runs that wrote it (its high bit: a hot run did), then V8's data. */
export function readCacheFile(bytes: Buffer): CacheFile | undefined {
  return bytes.length > 1 ? { writes: bytes[0]! & ~HOT, hot: (bytes[0]! & HOT) !== 0, data: bytes.subarray(1) } : undefined;
}

function readCache(file: string): CacheFile | undefined {
  try {
    return readCacheFile(fs.readFileSync(file));
  } catch {
    return undefined;
  }
}

/**
 * Temp file, fsync, rename: the file is whole or absent, so it is trusted as the bundle itself
 * is (V8 still refuses data from another V8 version, other flags or a source of another length,
 * and the name carries the bundle's content hash). Then caches of other bundles (earlier
 * builds of the same bundle) are dropped. Any failure leaves no cache, which only costs speed.
 */
function writeCache(file: string, script: vm.Script, bundleId: string, writes: number, hot: boolean): void {
  const dir = path.dirname(file);
  const temp = `${file}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const fd = fs.openSync(temp, 'w', 0o600);
    try {
      fs.writeSync(fd, Buffer.concat([Buffer.from([writes | (hot ? HOT : 0)]), script.createCachedData()]));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, file);
    const label = file.slice(file.lastIndexOf('-'));
    for (const name of fs.readdirSync(dir)) {
      if (name.endsWith(label) && !name.startsWith(`${bundleId}-`)) fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    try {
      fs.rmSync(temp, { force: true });
    } catch {
      // nothing more to do: the cache stays absent
    }
  }
}

// The command itself, not a module bin/oh-hai requires: Node's CommonJS loader resolving, reading
// and wrapping a second file cost a warm bridge run ~1.1 M instructions (docs/performance.md
// "Warm bridge (session 13)"). Required (bin/oh-hai, tests), it only exports.
if (require.main === module) launch();
