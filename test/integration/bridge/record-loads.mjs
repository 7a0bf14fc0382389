// Preload for warm-imports.test.ts (NODE_OPTIONS=--import=<this file>): appends the URL of every
// module the process loads to $OH_HAI_TEST_LOAD_LOG — ES modules through a load hook, CommonJS
// ones (commander's internals, a require()d package) from the require cache at exit.
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
process.on('exit', () => {
  const cjs = Object.keys(createRequire(import.meta.url).cache).map((f) => pathToFileURL(f).href);
  appendFileSync(log, cjs.map((u) => u + '\n').join(''));
});
