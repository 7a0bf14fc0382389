// The cold path: `oh-hai bridge --wait 0` on an entry with no connection yet (a fresh state root
// each run): resolve, whoami, start the background connection, and — since session 22
// (settings22) — wait until that connection has recorded itself, so the run's "started the
// background connection (pid …)" line names the one that took the entry. Timed against
// `node -e 0` in the same runs, and with `--against <checkout, built>` against that checkout's
// launcher, alternated run by run so both see the same load. Each run's connection is stopped
// (SIGTERM, waited for) and its state removed before the next run starts; that is not timed.
// Findings: docs/performance.md. Needs `npm run build`. Never run by CI.
//   node bench/bridge-cold.mjs [--runs 15] [--against /path/to/other/checkout]
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentEnv, percentile, root, startHub, timed, until } from './bridge-world.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1];
};
const runs = Number(arg('--runs', '15'));
const against = arg('--against', null);
const launchers = [{ name: 'this build', launch: path.join(root, 'dist', 'cli', 'launch.cjs') }];
if (against) launchers.push({ name: path.basename(against), launch: path.join(path.resolve(against), 'dist', 'cli', 'launch.cjs') });
for (const l of launchers) if (!existsSync(l.launch)) throw new Error(`${l.launch} is missing: run npm run build there`);

/** Every consumer.json under a state root (one entry here). */
function consumerRecords(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...consumerRecords(p));
    else if (e.name === 'consumer.json') out.push(JSON.parse(readFileSync(p, 'utf8')));
  }
  return out;
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stop the connection a cold run started (its record may trail the run on the older build) and remove its state. */
async function cleanUp(tmp) {
  const state = path.join(tmp, 'state');
  const rec = await until(() => existsSync(state) && consumerRecords(state).find((r) => r.state !== 'starting'), 'the run to record its connection', 20_000);
  if (alive(rec.pid)) {
    process.kill(rec.pid, 'SIGTERM');
    await until(() => !alive(rec.pid), `connection ${rec.pid} to exit`, 20_000);
  }
  rmSync(tmp, { recursive: true, force: true });
}

const hub = await startHub();
const caches = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-cold-cache-'));
const times = new Map([['node -e 0', []], ...launchers.map((l) => [l.name, []])]);
try {
  for (let i = 0; i < runs + 2; i++) {
    const bare = await timed(process.execPath, ['-e', '0'], { PATH: process.env.PATH });
    for (const [k, l] of launchers.entries()) {
      const name = `cold-${i}-${k}`;
      // An agent of its own per run too: a session a SIGTERM stopped stays live at the Hub, and an agent has at most 16.
      const { env, tmp } = agentEnv(hub.url, await hub.mint(name), name);
      // The code cache is the machine's, not the entry's: kept per build across runs, as a user's is.
      env.XDG_CACHE_HOME = path.join(caches, String(k));
      const r = await timed(process.execPath, [l.launch, 'bridge', '--wait', '0', '--session', name], env);
      if (r.code !== 0) throw new Error(`${l.name}: bridge --wait 0 exited ${r.code}`);
      await cleanUp(tmp);
      // The first two rounds write each build's code cache: not counted.
      if (i >= 2) times.get(l.name).push(r.ms);
    }
    if (i >= 2) times.get('node -e 0').push(bare.ms);
  }
} finally {
  await hub.stop();
  rmSync(caches, { recursive: true, force: true });
}

const bareP50 = percentile(times.get('node -e 0'), 50);
console.log(`bridge-cold: Node ${process.version}, ${runs} runs each, alternated; wall ms`);
for (const [name, xs] of times) {
  const p50 = percentile(xs, 50);
  console.log(
    `  ${name.padEnd(14)} p50 ${p50.toFixed(1).padStart(7)}  min ${Math.min(...xs)
      .toFixed(1)
      .padStart(7)}  max ${Math.max(...xs)
      .toFixed(1)
      .padStart(7)}  ${(p50 / bareP50).toFixed(2)}× node -e 0`,
  );
}
if (against) {
  const [a, b] = launchers.map((l) => percentile(times.get(l.name), 50));
  console.log(`  this build ÷ ${launchers[1].name}: ${(a / b).toFixed(2)} (p50s)`);
}
