// Shared by bench/soak.mjs and bench/fuzz-consumer.mjs: a seeded random source, a reference
// Hub that can be killed -9 and restarted on the same port and data, and the sender's view
// of every message's state. Needs `npm run build`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bin, hubCaller, hubReady } from './bridge-world.mjs';

/** mulberry32: a small seeded generator, so a run is replayed by its seed. */
export function seeded(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}

/** Command-line `--name value` as given, else null. */
export const stringArg = (name) => {
  const i = process.argv.indexOf(name);
  return i === -1 || process.argv[i + 1] === undefined ? null : process.argv[i + 1];
};

/** Command-line `--name value` (numbers), else the fallback. */
export const numberArg = (name, fallback) => {
  const given = stringArg(name);
  if (given === null) return fallback;
  const n = Number(given);
  if (!Number.isFinite(n)) throw new Error(`${name} takes a number, got ${JSON.stringify(given)}`);
  return n;
};

export const pause = (ms) => new Promise((r) => setTimeout(r, ms));

const exited = (p) => (p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', r)));

/**
 * `oh-hai hub serve` that survives kill -9: the same port, data dir and signing key on
 * every restart, so clients reconnect to it as to a Hub that crashed and came back.
 */
export async function startKillableHub(args = []) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-khub-'));
  const data = path.join(tmp, 'data');
  const env = {
    PATH: process.env.PATH,
    HOME: tmp,
    XDG_STATE_HOME: path.join(tmp, 'state'),
    XDG_CONFIG_HOME: path.join(tmp, 'config'),
    MA2H_SIGNING_KEY: 'bench-signing-key-' + process.pid,
  };
  let proc = null;
  let url = null;
  const launch = async (port) => {
    const p = spawn(process.execPath, [bin, 'hub', 'serve', '--port', String(port), '--data', data, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d) => (err = (err + d).slice(-4000)));
    let got;
    try {
      got = await hubReady(p);
    } catch (e) {
      throw new Error(`${e.message}: ${err}`);
    }
    p.stdout.resume();
    proc = p;
    return got;
  };
  url = await launch(0);
  const port = Number(new URL(url).port);
  const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
  const call = hubCaller(url);
  const hub = {
    url,
    human,
    call,
    get pid() {
      return proc?.pid ?? null;
    },
    mint: async (label) => {
      const r = await call(human, 'POST', '/v1/account/agents', { label });
      return { id: r.agent.id, token: r.token };
    },
    /** kill -9, then start again on the same port (retrying while the port is still held). */
    async killAndRestart(downMs = 0) {
      const p = proc;
      p.kill('SIGKILL');
      await exited(p);
      if (downMs > 0) await pause(downMs);
      for (let attempt = 0; ; attempt += 1) {
        try {
          await launch(port);
          return;
        } catch (e) {
          if (attempt >= 50) throw e;
          await pause(100);
        }
      }
    },
    /** Every message `token` sent, with its state (the Hub's paging, newest first). */
    async sentStates(token) {
      const out = new Map();
      let before = null;
      for (;;) {
        const r = await call(token, 'GET', `/v1/messages?direction=sent&limit=500${before ? `&before=${encodeURIComponent(before)}` : ''}`);
        for (const m of r.messages) out.set(m.id, m.state);
        if (!r.next || r.messages.length === 0) return out;
        before = r.next;
      }
    },
    async stop() {
      if (proc) {
        proc.kill('SIGKILL');
        await exited(proc);
      }
      rmSync(tmp, { recursive: true, force: true });
    },
  };
  return hub;
}
