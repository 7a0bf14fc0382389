// Bundles tsc's output into two CommonJS files that bin/oh-hai runs through a V8 code cache
// (src/cli/launch.cts, docs/performance.md): dist/oh-hai.cjs (dist/cli/main.js, every
// command) and dist/bridge.cjs (dist/cli/bridge-main.js: the plain run of `oh-hai bridge`,
// which hands anything else to dist/oh-hai.cjs), and dist/bridge-cold.cjs, what the bridge's
// bundle loads only on a cold run (BRIDGE_COLD below). Run by `npm run build` after tsc.
//
// Each module keeps its own import.meta.url: the bundle maps it back to the module's file in
// dist/, so paths resolved from it (the entry script for the background connection, the
// double fork's intermediate, createRequire for packages loaded on first use) are the same
// as in tsc's output. The first line carries the content hash the code cache is keyed on.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');

/** `import.meta.url` in a dist module → the URL of that module's own file, computed from the bundle's place. */
const ownUrl = {
  name: 'own-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      const rel = path.relative(dist, args.path);
      if (rel.startsWith('..')) return undefined;
      const contents = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', `__ohHaiModuleUrl(${JSON.stringify(rel.split(path.sep).join('/'))})`);
      return { contents, loader: 'js' };
    });
  },
};

/**
 * commander requires node:child_process at load for executable subcommands, which oh-hai has
 * none of; loading it costs every run ~1 ms. Its use is deferred to first property access.
 */
const lazyChildProcessForCommander = {
  name: 'lazy-child-process-for-commander',
  setup(build) {
    build.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      args.importer.includes(`${path.sep}node_modules${path.sep}commander${path.sep}`) ? { path: 'child_process', namespace: 'lazy-builtin' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, () => ({
      contents: "module.exports = new Proxy({}, { get: (_, key) => require('node:child_process')[key] });",
      loader: 'js',
    }));
  },
};

/**
 * Modules the bridge imports lazily and a warm run never reaches: the Hub client with the agent
 * directory (a token without a cached agent id, an --allow-from label the cache cannot answer),
 * the double fork (starting the background connection) and 0.9-home adoption. In dist/bridge.cjs
 * they cost every warm run their share of the code cache it deserialises (docs/performance.md
 * "Warm bridge (session 13)"), so they are bundled into dist/bridge-cold.cjs, which the bridge
 * requires at its first such import. The cold file has its own copies of the modules they
 * share with the bridge (core, contract, config, spool): what those keep at module level is
 * memos (the CRC and SHA-256 instances, /proc's reach), test counters and trace stamps, none of
 * which the bridge reads back from the cold copy. test/integration/bridge/warm-imports.test.ts
 * holds the split.
 */
const BRIDGE_COLD = ['hub/client/index.js', 'cli/messaging/directory.js', 'spawn/index.js', 'cli/resolve/adopt-legacy.js'];
const COLD_FILE = 'bridge-cold.cjs';
const COLD_SCHEME = 'oh-hai-cold:';

/** In the bridge's bundle, `import()` of a BRIDGE_COLD module stays an import of `oh-hai-cold:<module>`, rewritten below. */
const coldImports = {
  name: 'bridge-cold-imports',
  setup(build) {
    build.onResolve({ filter: /^\./ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      const rel = path.relative(dist, path.resolve(args.resolveDir, args.path)).split(path.sep).join('/');
      return BRIDGE_COLD.includes(rel) ? { path: COLD_SCHEME + rel, external: true } : undefined;
    });
  },
};

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  charset: 'ascii',
  // Loaded from node_modules on first use only: the Hub's SQLite store (native), and pg and
  // prom-client, which only a Hub on PostgreSQL or with --admin-listen needs; the MCP SDK and
  // zod, which only `oh-hai mcp` loads (their CommonJS builds): bundled, they would grow the
  // file every other command parses by a few hundred kB. The lock library (with graceful-fs)
  // and the SSE parser likewise: a bridge run takes no lock and opens no stream unless it starts
  // or adopts something, and bundled they cost its every run their share of the code cache
  // (docs/performance.md "Warm bridge (session 12)").
  external: [
    'better-sqlite3',
    'pg',
    'prom-client',
    'proper-lockfile',
    'eventsource-parser',
    '@modelcontextprotocol/server',
    '@modelcontextprotocol/server/stdio',
    'zod',
  ],
  write: false,
  logLevel: 'warning',
};
const banner = (...lines) => ({
  js: [
    "const __ohHaiModuleUrl = (rel) => require('node:url').pathToFileURL(require('node:path').join(__dirname, rel)).href;",
    'const __ohHaiBuiltin = (m) => ({ __proto__: m, default: m });',
    'const __ohHaiNodeCache = {};',
    'const __ohHaiNode = (id) => (__ohHaiNodeCache[id] ??= process.getBuiltinModule(id) ?? require(id));',
    ...lines,
  ].join('\n'),
});
const plugins = [ownUrl, lazyChildProcessForCommander];

const [whole, bridge, cold] = await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: { 'oh-hai': path.join(dist, 'cli', 'main.js') },
    outdir: dist,
    outExtension: { '.js': '.cjs' },
    banner: banner(),
    plugins,
  }),
  esbuild.build({
    ...common,
    entryPoints: { bridge: path.join(dist, 'cli', 'bridge-main.js') },
    outdir: dist,
    outExtension: { '.js': '.cjs' },
    // The bundle's __dirname is dist/ (the launcher passes it); Node's loader compiles the cold file on first use.
    banner: banner(
      `const __ohHaiCold = (rel) => Promise.resolve().then(() => require(require('node:path').join(__dirname, ${JSON.stringify(COLD_FILE)})).modules[rel]);`,
    ),
    plugins: [coldImports, ...plugins],
  }),
  esbuild.build({
    ...common,
    stdin: {
      contents: [
        ...BRIDGE_COLD.map((rel, i) => `import * as m${i} from './${rel}';`),
        `export const modules = { ${BRIDGE_COLD.map((rel, i) => `${JSON.stringify(rel)}: m${i}`).join(', ')} };`,
      ].join('\n'),
      resolveDir: dist,
      sourcefile: 'bridge-cold-entry.js',
    },
    outfile: path.join(dist, COLD_FILE),
    banner: banner(),
    plugins,
  }),
]);
/**
 * `import path from 'node:path'` becomes `__toESM(require("node:path"), 1)`, which copies every
 * property of the module into a new object of getters, once per importing module: ~0.5 ms of a
 * bridge run across its ~30 such imports. A built-in is a plain object whose default export is
 * itself, so an object inheriting from it, with `default` set, reads the same and copies nothing.
 */
const builtinInterop = (code) => code.replace(/__toESM\(require\("(node:[a-z_/]+)"\), 1\)/g, '__ohHaiBuiltin(require("$1"))');
/**
 * Each `require("node:fs")` goes through Node's CommonJS loader (~19 K instructions a call), and
 * a bridge run's module initialisation makes dozens, mostly of node:fs and node:path.
 * process.getBuiltinModule (Node >= 20.16) answers the same object without resolving anything,
 * and __ohHaiNode asks it once per built-in. A built-in this Node lacks is required as before,
 * so it still throws where the code expects it to (docs/performance.md "Warm bridge (session 9)").
 */
/**
 * esbuild leaves `import()` of an external package as it is, which the launcher's vm.Script
 * cannot run: a package's namespace is built from require, as Node's import() of a CommonJS
 * package gives it (its exports as `default`, and each of them by name).
 */
const packageImport = (code) => code.replace(/\bimport\("(proper-lockfile)"\)/g, 'Promise.resolve().then(() => __ohHaiBuiltin(require("$1")))');
const coldImport = (code) => code.replace(/\bimport\("oh-hai-cold:([a-z/.-]+)"\)/g, '__ohHaiCold("$1")');
const builtinLookup = (code) => code.replace(/\brequire\("(node:[a-z_/]+)"\)/g, '__ohHaiNode("$1")');

// The cold file first: a bridge bundle newer than tsc's output (what the launcher runs) then
// never sits next to a cold file of an older build.
for (const { path: out, text: built } of [cold, bridge, whole].flatMap((r) => r.outputFiles)) {
  const code = coldImport(packageImport(builtinLookup(builtinInterop(built))));
  // The launcher compiles a bundle with vm.Script, which has no loader for a real import().
  if (/\bimport\s*\(/.test(code.replace(/\/\/.*$/gm, ''))) throw new Error(`scripts/bundle.mjs: ${out} still contains an import() call`);
  // ASCII, so the launcher reads it as latin1 into a one-byte string without decoding UTF-8.
  // (esbuild escapes everything but tagged templates; write HTML entities there.)
  const wide = code.search(/[^\x00-\x7f]/);
  if (wide !== -1) throw new Error(`scripts/bundle.mjs: ${out} is not ASCII at ${JSON.stringify(code.slice(wide - 60, wide + 10))}`);
  const id = createHash('sha256').update(code).digest('hex').slice(0, 32);
  writeFileSync(out, `// oh-hai bundle ${id}\n${code}`);
}
