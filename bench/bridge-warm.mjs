// The warm path: a consumer already running, 100 records waiting after the cursor.
// Measures the wall time of `oh-hai bridge --wait 0` (start, adopt, print 100 summary lines
// with a cursor write after each flush, epilogue, exit) against `node -e 0` on the same
// machine, interleaved run by run so both see the same load. Target (issue 19): ≤ 1.5× bare
// node, on Node 20 and on Node 24 (run the bench with that line's node; the header names it). The same run without the code cache (OH_HAI_CODE_CACHE=0: what a run pays when the
// cache is missing) and through tsc's modules (`node dist/cli/main.js`: what the launcher
// falls back to) are timed alongside, for what the bundle and the cache buy. `--against
// <bin>` also times another build's launcher in the same runs (e.g. a checkout of the
// previous commit), so a before/after comparison shares the load too. This build runs as the
// installed command does: package.json's `bin` (the launcher itself), not bin/oh-hai.
// Findings: docs/performance.md. Needs `npm run build`. Never run by CI.
//   node bench/bridge-warm.mjs [--runs 20] [--records 100] [--warmup 4] [--against /path/to/other/bin/oh-hai]
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { sessionStateDir, stateKey } from '../dist/spool/index.js';
import { agentEnv, bin, percentile, root, startHub, timed, until } from './bridge-world.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1];
};
const RUNS = Number(arg('--runs', 20));
const RECORDS = Number(arg('--records', 100));
const AGAINST = arg('--against', null);
/** Enough for the launcher's cache writes (3 runs) and one run that reads the finished cache. */
const WARMUP = Number(arg('--warmup', 4));
/** What `oh-hai` runs once installed: bin/oh-hai loads the same launcher as a second file (~1.1 M instructions more). */
const command = path.join(root, JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).bin['oh-hai']);

const hub = await startHub(['--stream-max-hold-seconds', '30']);
const agent = await hub.mint('warm-bench');
const { env, tmp } = agentEnv(hub.url, agent, 'warm');
const dir = sessionStateDir(env.XDG_STATE_HOME, stateKey(hub.url, agent.id, 'warm'));
/**
 * The cursor before the first record, as the reader writes every cursor (src/spool/cursor.ts:
 * padded to 64 bytes): a re-run finds the file its previous run left and steps it in place. A
 * shorter file makes the first step an atomic replace a real re-run never does.
 */
const START_CURSOR = '{"seq":0,"offset":0}'.padEnd(63) + '\n';
const spoolLines = () => {
  try {
    return readFileSync(path.join(dir, 'bridge.ndjson'), 'utf8').split('\n').length - 1;
  } catch {
    return 0;
  }
};
try {
  // First run starts the background connection; then fill the spool.
  await timed(process.execPath, [bin, 'bridge', '--wait', '0'], env);
  const session = await until(() => {
    try {
      return JSON.parse(readFileSync(path.join(dir, 'session.json'), 'utf8')).id;
    } catch {
      return null;
    }
  }, 'the session');
  for (let i = 0; i < RECORDS; i++) {
    await hub.call(hub.human, 'POST', '/v1/directives', { to: `agent:${agent.id}#${session}`, text: `warm record ${i} ${'x'.repeat(200)}` });
  }
  await until(() => spoolLines() >= RECORDS, 'the records to be spooled');

  const subjects = [
    { label: 'node -e 0', args: ['-e', '0'], ms: [] },
    { label: `oh-hai bridge (${RECORDS} waiting, warm)`, args: [command, 'bridge', '--wait', '0'], ms: [] },
    { label: 'the same, OH_HAI_CODE_CACHE=0', args: [command, 'bridge', '--wait', '0'], env: { OH_HAI_CODE_CACHE: '0' }, ms: [] },
    // Node's own compile cache (module.enableCompileCache, Node ≥ 22.1) in place of the launcher's.
    ...(typeof Module.enableCompileCache === 'function'
      ? [
          {
            label: "the same, Node's compile cache (OH_HAI_CODE_CACHE=node)",
            args: [command, 'bridge', '--wait', '0'],
            env: { OH_HAI_CODE_CACHE: 'node' },
            ms: [],
          },
        ]
      : []),
    { label: 'the same, node dist/cli/main.js', args: [path.join(root, 'dist', 'cli', 'main.js'), 'bridge', '--wait', '0'], ms: [] },
    // Its own cache directory: a launcher drops the code caches of other builds when it writes
    // its own (src/cli/launch.cts), so two builds sharing one would throw each other's away on
    // every run and neither would run warm (session 8 read ~3× for both that way).
    ...(AGAINST
      ? [{ label: `--against ${AGAINST}`, args: [AGAINST, 'bridge', '--wait', '0'], env: { XDG_CACHE_HOME: path.join(tmp, 'against-cache') }, ms: [] }]
      : []),
  ];
  // Untimed runs first, so every timed run reads a code cache its launcher has finished writing
  // (the first runs of a build write it, each at its exit).
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const s of subjects) {
      const bridge = s.args[0] !== '-e';
      if (bridge) writeFileSync(path.join(dir, 'cursor.json'), START_CURSOR, { mode: 0o600 });
      let lines = 0;
      const r = await timed(process.execPath, s.args, { ...env, ...s.env }, (d) => (lines += d.toString().split('\n').length - 1));
      if (r.code !== 0 || (bridge && lines !== RECORDS)) throw new Error(`${s.label} exited ${r.code} after ${lines} lines`);
      if (i >= WARMUP) s.ms.push(r.ms);
    }
  }
  const fmt = (xs) => `p50 ${percentile(xs, 50).toFixed(1)} ms, p90 ${percentile(xs, 90).toFixed(1)} ms, min ${Math.min(...xs).toFixed(1)} ms`;
  const width = Math.max(...subjects.map((s) => s.label.length)) + 1;
  // Every subject runs on this Node (the Hub too): run the bench with another node to measure that line.
  console.log(
    `bridge-warm: Node ${process.version} (${process.execPath}), ${RUNS} runs, ${RECORDS} records; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  for (const s of subjects) console.log(`${(s.label + ':').padEnd(width)} ${fmt(s.ms)}`);
  const bare = percentile(subjects[0].ms, 50);
  for (const s of subjects.slice(1)) console.log(`ratio (p50): ${(percentile(s.ms, 50) / bare).toFixed(2)}× bare node (target ≤ 1.5×) — ${s.label}`);
} finally {
  try {
    const pid = JSON.parse(readFileSync(path.join(dir, 'consumer.json'), 'utf8')).pid;
    process.kill(pid, 'SIGTERM');
  } catch {
    // no consumer to stop
  }
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
}
