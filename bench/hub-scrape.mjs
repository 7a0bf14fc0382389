// What one /metrics scrape costs a Hub holding S streams: the Hub's CPU per scrape and how long the
// scrape holds its event loop (an operator's Prometheus scrapes every 15 s while the fleet is busy;
// a turn that long delays every push and connect the Hub has in hand). One SQLite Hub per build
// (the process-level collectors and ours are the same on both stores), its streams opened in steps
// (--streams 5000,10000) and held with a hold and keep-alive long enough that nothing else runs
// during the windows: per step, windows without scrapes and with one scrape every --gap ms
// alternate, and a scrape's CPU is the Hub's CPU in the scrape windows less the quiet windows' rate.
// A scrape's wall time (asked → answer read, over a kept connection) is its loop turn on a Hub
// that is otherwise idle; the loop-delay maximum the Hub itself reports covers the time since the
// previous scrape (prom-client resets it at each scrape), so it holds the previous scrape's turn.
// Needs `npm run build` (and of --against's checkout). Never run by CI.
// Usage: node bench/hub-scrape.mjs [--streams 5000,10000] [--scrapes 20] [--gap 100] [--windows 2]
//          [--against <another checkout, built>] [--repeat 1]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hubReady } from './bridge-world.mjs';
import { holdStream } from './hub-streams.mjs';
import { keepAliveCaller } from './sender.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const opt = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const STEPS = opt('streams', '5000,10000').split(',').map(Number);
const SCRAPES = Number(opt('scrapes', '20'));
const GAP_MS = Number(opt('gap', '100'));
const WINDOWS = Number(opt('windows', '2'));
const REPEAT = Number(opt('repeat', '1'));
const against = opt('against', null);
const BUILDS = [root, ...(against === null ? [] : [path.resolve(against)])];
/** Streams held this long and kept alive this rarely: no reconnect or keep-alive during the windows. */
const QUIET_SECONDS = 600;

const TICKS = 100;
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
};
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
/** One scrape over the kept connection: its wall time (ms) and its text. */
const scrape = (adminUrl) =>
  new Promise((resolve, reject) => {
    const t0 = performance.now();
    http
      .get(`${adminUrl}/metrics`, { agent }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ ms: performance.now() - t0, text }));
      })
      .on('error', reject);
  });
const lagMaxMs = (text) => 1000 * Number(/^oh_hai_hub_process_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1] ?? NaN);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run(build) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-scrape-'));
  const hub = spawn(
    process.execPath,
    [
      path.join(build, 'bin', 'oh-hai'),
      'hub',
      'serve',
      '--port',
      '0',
      '--data',
      dir,
      '--admin-listen',
      '127.0.0.1:0',
      '--stream-max-hold-seconds',
      String(QUIET_SECONDS),
      '--keepalive-seconds',
      String(QUIET_SECONDS),
    ],
    { env: { ...process.env, MA2H_SIGNING_KEY: randomBytes(16).toString('hex') }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  hub.stdout.on('data', (d) => (out += d));
  const streams = [];
  try {
    const url = await hubReady(hub);
    let adminUrl = null;
    while (adminUrl === null) {
      adminUrl = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(out)?.[1] ?? null;
      if (adminUrl === null) await sleep(20);
    }
    const call = keepAliveCaller(url, 32);
    const human = readFileSync(path.join(dir, 'human-token'), 'utf8').trim();
    const rows = [];
    let opened = 0;
    for (const target of STEPS) {
      // 16 live sessions per agent at most; streams opened at most 500 at once (the listen backlog).
      for (let i = streams.length; i < target; i += 16) {
        const a = await call(human, 'POST', '/v1/account/agents', { label: `scrape-${i}` });
        const made = await Promise.all(
          Array.from({ length: Math.min(16, target - i) }, (_, j) => call(a.token, 'POST', '/v1/sessions', { client_key: `s-${i + j}` })),
        );
        for (const s of made) {
          while (streams.length - opened >= 500) await sleep(5);
          streams.push(holdStream({ url, id: s.session.id, token: a.token }, { arrived: () => undefined }, { onOpen: () => opened++ }));
        }
      }
      while (opened < target) await sleep(20);
      await sleep(1000);
      const quiet = [];
      const scraped = [];
      const walls = [];
      const lags = [];
      for (let w = 0; w < WINDOWS; w++) {
        let c0 = cpuOf(hub.pid);
        let t0 = performance.now();
        await sleep(SCRAPES * GAP_MS);
        quiet.push({ cpu: cpuOf(hub.pid) - c0, s: (performance.now() - t0) / 1000 });
        c0 = cpuOf(hub.pid);
        t0 = performance.now();
        for (let k = 0; k < SCRAPES; k++) {
          const r = await scrape(adminUrl);
          walls.push(r.ms);
          // The first of a window follows a quiet stretch: its maximum is not a scrape's.
          if (k > 0) lags.push(lagMaxMs(r.text));
          await sleep(GAP_MS);
        }
        scraped.push({ cpu: cpuOf(hub.pid) - c0, s: (performance.now() - t0) / 1000 });
      }
      const rate = quiet.reduce((a, q) => a + q.cpu, 0) / quiet.reduce((a, q) => a + q.s, 0);
      const extra = scraped.reduce((a, x) => a + x.cpu - rate * x.s, 0);
      rows.push({
        streams: opened,
        quietMsPerS: rate * 1000,
        cpuMsPerScrape: (extra * 1000) / (SCRAPES * WINDOWS),
        wallP50: pct(walls, 50),
        wallMax: Math.max(...walls),
        lagP50: pct(lags, 50),
        lagMax: Math.max(...lags),
        bytes: Buffer.byteLength((await scrape(adminUrl)).text),
        load: os.loadavg()[0],
      });
    }
    return rows;
  } finally {
    for (const s of streams) s.stop();
    hub.kill('SIGTERM');
    await new Promise((r) => (hub.exitCode !== null ? r() : hub.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `one SQLite Hub per build; ${SCRAPES} scrapes ${GAP_MS} ms apart per window, ${WINDOWS} windows with and ${WINDOWS} without per step; ${os.cpus().length} cores`,
);
console.log('build                 streams  quiet Hub CPU ms/s  Hub CPU ms/scrape  scrape wall p50 / max ms  Hub loop delay max p50 / max ms  bytes  load');
for (let rep = 0; rep < REPEAT; rep++) {
  for (const build of rep % 2 === 0 ? BUILDS : [...BUILDS].reverse()) {
    for (const r of await run(build))
      console.log(
        `${path.basename(build).padEnd(20)} ${String(r.streams).padStart(8)}  ${r.quietMsPerS.toFixed(1).padStart(18)}  ${r.cpuMsPerScrape.toFixed(2).padStart(17)}  ${`${r.wallP50.toFixed(2)} / ${r.wallMax.toFixed(2)}`.padStart(24)}  ${`${r.lagP50.toFixed(1)} / ${r.lagMax.toFixed(1)}`.padStart(31)}  ${String(r.bytes).padStart(5)}  ${r.load.toFixed(1)}`,
      );
  }
}
agent.destroy();
