// Preload for warm-imports.test.ts (NODE_OPTIONS=--import=<this file>): appends to
// $OH_HAI_TEST_LOAD_LOG the URL of every module file the process loads — ES modules through a
// load hook, CommonJS ones from the require cache at exit — and `builtin:<name>` for every
// Node built-in it loaded beyond what a bare `node` start has.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

const log = process.env.OH_HAI_TEST_LOAD_LOG;
const hooks = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, next) {
  appendFileSync(log, url + '\\n');
  return next(url, context);
}`;
register('data:text/javascript,' + encodeURIComponent(hooks), { data: { log } });
const atStart = new Set(process.moduleLoadList);
process.on('exit', () => {
  const cjs = Object.keys(createRequire(import.meta.url).cache).map((f) => pathToFileURL(f).href);
  const builtins = process.moduleLoadList
    .filter((m) => !atStart.has(m) && m.startsWith('NativeModule '))
    .map((m) => `builtin:${m.slice('NativeModule '.length)}`);
  appendFileSync(log, [...cjs, ...builtins].map((u) => u + '\n').join(''));
});
