// Kill soak (issue 18): continuous traffic to one agent while the bench kill -9s the
// background connection, the reader (`oh-hai bridge --raw`) and the Hub at random instants;
// then a final drain. Prints kills by target and messages sent / printed / lost /
// duplicated beyond one per reader kill / acknowledged before printed, and exits 1 unless
// lost, duplicated-beyond and acked-before-printed are all 0 and no process exited with a
// code nobody caused. Seeded: the same --seed replays the same schedule (the machine's
// timing still varies). Needs `npm run build`.
//   node bench/soak.mjs [--kills 1000] [--seed N] [--drain-seconds 300] [--minutes M]
// `npm test` runs it with --kills 50 (test/integration/reliability/soak.test.ts).
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { sessionStateDir, stateKey } from '../dist/spool/index.js';
import { agentEnv, bin } from './bridge-world.mjs';
import { numberArg, pause, seeded, startKillableHub } from './reliability-world.mjs';

const KILLS = numberArg('--kills', 1000);
const SEED = numberArg('--seed', Date.now() % 1_000_000);
const DRAIN_SECONDS = numberArg('--drain-seconds', 300);
// A bound on the killing phase for a shared machine: the run stops killing at it and says so.
const MINUTES = numberArg('--minutes', Infinity);
const rng = seeded(SEED);
console.log(`soak: seed ${SEED}, ${KILLS} kills (replay: node bench/soak.mjs --kills ${KILLS} --seed ${SEED})`);

const hub = await startKillableHub(['--stream-max-hold-seconds', '2', '--keepalive-seconds', '1']);
const me = await hub.mint('soak-me');
const peer = await hub.mint('soak-peer');
const { env: base, tmp } = agentEnv(hub.url, me, 'soak');
const env = { ...base, OH_HAI_HEARTBEAT_MS: '200', OH_HAI_BACKOFF_MIN_MS: '20', OH_HAI_BACKOFF_MAX_MS: '250', OH_HAI_CURSOR_POLL_MS: '200' };
const dir = sessionStateDir(env.XDG_STATE_HOME, stateKey(hub.url, me.id, 'soak'));

const sent = new Set();
const printed = new Map(); // message id → times printed
const kills = { consumer: 0, reader: 0, hub: 0 };
const unexpectedExits = [];
const ackedBeforePrinted = new Set();
// Two flags, not one: the readers must keep running through the final drain after the sender stops.
let sending = true;
let running = true;
let reader = null;
let readerRuns = 0;

/** The sender: one notify at a time to the agent's principal address, a few ms apart; a Hub that is down is waited for. */
async function sendLoop() {
  let n = 0;
  while (sending) {
    try {
      const r = await hub.call(peer.token, 'POST', '/v1/messages', { to: `agent:${me.id}`, intent: 'notify', text: `soak message ${n}` });
      sent.add(r.message.id);
      n += 1;
    } catch {
      await pause(50);
    }
    await pause(rng.int(2, 30));
  }
}

/** The agent: `oh-hai bridge --raw` run again after every exit, its stdout read line by line as it comes. */
async function readerLoop() {
  while (running || readerRuns === 0) {
    readerRuns += 1;
    const p = spawn(process.execPath, [bin, 'bridge', '--raw', '--wait', '3', '--max-retries', '100000'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    reader = p;
    p.killedByUs = false;
    let pending = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (d) => {
      pending += d;
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const rec = JSON.parse(line);
        if (rec.type === 'entry' && rec.entry.message_id) printed.set(rec.entry.message_id, (printed.get(rec.entry.message_id) ?? 0) + 1);
      }
    });
    p.stderr.setEncoding('utf8').on('data', (d) => (err = (err + d).slice(-3000)));
    const code = await new Promise((r) => p.once('close', (c, s) => r(c ?? s)));
    // A line cut by kill -9 mid-write was never printed whole: it is not counted.
    if (!p.killedByUs && code !== 0) unexpectedExits.push({ who: 'reader', code, stderr: err.trim().split('\n').slice(-3).join(' | ') });
    reader = null;
    if (!running) return;
    await pause(rng.int(0, 40));
  }
}

function consumerPid() {
  try {
    const rec = JSON.parse(readFileSync(`${dir}/consumer.json`, 'utf8'));
    if (rec.state === 'stopped') return null;
    process.kill(rec.pid, 0);
    return readFileSync(`/proc/${rec.pid}/cmdline`, 'utf8').includes('__consumer') ? rec.pid : null;
  } catch {
    return null;
  }
}

/**
 * Acknowledged at the Hub but not yet printed. Everything acknowledged before the Hub was
 * asked was printed before it (print → cursor → ack), so it is in our pipes: give them time
 * to be read, then whatever is still missing was acknowledged before it was printed.
 */
async function audit() {
  let states;
  try {
    states = await hub.sentStates(peer.token);
  } catch {
    return; // the Hub is down this instant; the next audit covers it
  }
  const suspects = [...states].filter(([id, s]) => s === 'acknowledged' && !printed.has(id)).map(([id]) => id);
  if (suspects.length === 0) return;
  await pause(2000);
  for (const id of suspects) if (!printed.has(id)) ackedBeforePrinted.add(id);
}

async function killLoop() {
  const stopAt = Date.now() + MINUTES * 60_000;
  for (let k = 0; k < KILLS && Date.now() < stopAt; k += 1) {
    await pause(rng.int(100, 700));
    let target = rng.pick(['consumer', 'reader', 'hub']);
    const cpid = consumerPid();
    if (target === 'consumer' && cpid === null) target = 'reader';
    if (target === 'reader' && reader === null) target = 'hub';
    if (target === 'consumer') process.kill(cpid, 'SIGKILL');
    else if (target === 'reader') {
      reader.killedByUs = true;
      reader.kill('SIGKILL');
    } else await hub.killAndRestart(rng.int(0, 300));
    kills[target] += 1;
    if ((k + 1) % 25 === 0) {
      await audit();
      console.log(
        `soak: ${k + 1}/${KILLS} kills (consumer ${kills.consumer}, reader ${kills.reader}, hub ${kills.hub}); sent ${sent.size}, printed ${printed.size}`,
      );
    }
  }
}

const started = Date.now();
const sender = sendLoop();
const readers = readerLoop();
let drained = false;
try {
  await killLoop();
  sending = false;
  await sender;
  // The final drain: readers keep running until everything sent is printed and acknowledged.
  const deadline = Date.now() + DRAIN_SECONDS * 1000;
  while (Date.now() < deadline) {
    let states = null;
    try {
      states = await hub.sentStates(peer.token);
    } catch {
      states = null;
    }
    if (states && [...sent].every((id) => printed.has(id) && states.get(id) === 'acknowledged')) {
      drained = true;
      break;
    }
    await pause(500);
  }
  await audit();
} finally {
  running = false;
  if (reader) {
    reader.killedByUs = true;
    reader.kill('SIGTERM');
  }
  await readers;
  const cpid = consumerPid();
  if (cpid) process.kill(cpid, 'SIGTERM');
  await pause(300);
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
}

const lost = [...sent].filter((id) => !printed.has(id));
const duplicates = [...printed.values()].reduce((n, c) => n + (c - 1), 0);
const beyond = Math.max(0, duplicates - kills.reader);
const total = kills.consumer + kills.reader + kills.hub;
console.log(`soak: seed ${SEED}; ${((Date.now() - started) / 1000).toFixed(0)} s; ${readerRuns} reader runs`);
console.log(
  `kills: ${total}${total < KILLS ? ` (stopped by --minutes ${MINUTES})` : ''} (consumer ${kills.consumer}, reader ${kills.reader}, hub ${kills.hub})`,
);
console.log(
  `messages: sent ${sent.size}, printed ${[...sent].filter((id) => printed.has(id)).length}, lost ${lost.length}, duplicated ${duplicates} (beyond one per reader kill: ${beyond}), acked-before-printed ${ackedBeforePrinted.size}`,
);
console.log(
  `unexpected exits: ${unexpectedExits.length}${unexpectedExits.length ? ' ' + JSON.stringify(unexpectedExits.slice(0, 5)) : ''}; drained: ${drained ? 'yes' : 'NO'}`,
);
const ok = drained && lost.length === 0 && beyond === 0 && ackedBeforePrinted.size === 0 && unexpectedExits.length === 0;
console.log(`soak: ${ok ? 'PASS' : 'FAIL'} (seed ${SEED})`);
if (!ok && lost.length) console.log(`lost: ${lost.slice(0, 10).join(' ')}`);
process.exit(ok ? 0 : 1);
