// Mutation score of the durable path (issue 20): Stryker with the vitest runner, per-test
// coverage, over the files stryker.config.mjs names. Prints the date, the commit, the command,
// the score per file and in all, and every surviving mutant (docs/reliability.md "Mutation
// testing" says why each one is equivalent or harmless). Long: never run by CI.
//
//   node bench/mutation.mjs [--concurrency 2] [--force] [--report-only]
//
// Incremental (stryker.config.mjs): a mutant whose code and covering tests did not change since
// the last run keeps its result; --force runs every mutant again.
// --report-only re-reads the last run's reports/mutation/mutation.json instead of running.
// Two workers at most by default: the machine is shared.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPORT = path.join(root, 'reports', 'mutation', 'mutation.json');

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1];
};
const concurrency = Number(value('--concurrency', '2'));
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`bench/mutation.mjs: --concurrency must be a whole number ≥ 1, got ${JSON.stringify(value('--concurrency'))}`);
  process.exit(2);
}

const git = (...a) => execFileSync('git', a, { cwd: root, encoding: 'utf8' }).trim();
const commit = git('rev-parse', '--short', 'HEAD');
const dirty = git('status', '--porcelain', '--untracked-files=no') !== '' ? ' (with uncommitted changes)' : '';
const command = ['npx', 'stryker', 'run', 'stryker.config.mjs', '--concurrency', String(concurrency), ...(flag('--force') ? ['--force'] : [])];
const started = new Date();

if (!flag('--report-only')) {
  const run = spawnSync(command[0], command.slice(1), { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`bench/mutation.mjs: stryker exited ${run.status ?? run.signal}`);
    process.exit(1);
  }
}

const report = JSON.parse(readFileSync(REPORT, 'utf8'));
const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);
const rows = [];
const survivors = [];
let detected = 0;
let undetected = 0;
for (const [file, { mutants }] of Object.entries(report.files).sort(([a], [b]) => a.localeCompare(b))) {
  const d = mutants.filter((m) => DETECTED.has(m.status)).length;
  const u = mutants.filter((m) => UNDETECTED.has(m.status));
  detected += d;
  undetected += u.length;
  rows.push([file, d, u.length]);
  for (const m of u)
    survivors.push({
      file,
      line: m.location.start.line,
      column: m.location.start.column,
      status: m.status,
      mutator: m.mutatorName,
      replacement: m.replacement ?? '',
    });
}
const pct = (d, u) => (d + u === 0 ? 'n/a' : `${((100 * d) / (d + u)).toFixed(2)} %`);

console.log('');
console.log(`mutation score of the durable path — ${started.toISOString()}, commit ${commit}${dirty}`);
console.log(`command: node bench/mutation.mjs ${args.join(' ')}  (runs: ${command.join(' ')})`);
console.log('');
console.log('file\tdetected\tsurvived\tscore');
for (const [file, d, u] of rows) console.log(`${file}\t${d}\t${u}\t${pct(d, u)}`);
console.log(`all\t${detected}\t${undetected}\t${pct(detected, undetected)}`);
console.log('');
console.log(`survivors (${survivors.length}):`);
for (const s of survivors)
  console.log(`${s.file}:${s.line}:${s.column}\t${s.status}\t${s.mutator}\t${JSON.stringify(s.replacement.replace(/\s+/g, ' ').slice(0, 120))}`);
