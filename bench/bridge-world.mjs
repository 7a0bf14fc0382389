// Shared by the bridge benches: a real reference Hub, a minted agent, and the CLI as a process.
// Needs `npm run build` first. Never run by CI.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const bin = path.join(root, 'bin', 'oh-hai');

/** The URL a starting `oh-hai hub serve` prints on its ready line (rejects if it exits first). */
export function hubReady(proc) {
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /^hub: listening on (http:\/\/\S+)$/m.exec(out);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (c, sig) => reject(new Error(`hub exited ${c ?? sig} before it was ready`)));
  });
}

/** `call(token, method, path, body?)` against a Hub: the parsed JSON, or a throw naming the status. */
export function hubCaller(url) {
  return async (token, method, p, body) => {
    const res = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(30_000),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${p} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}

/** Start `oh-hai hub serve` (of `cli`, default this checkout's) on an ephemeral loopback port; resolves once its ready line is out. */
export async function startHub(args = [], extraEnv = {}, cli = bin) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-hub-'));
  const data = path.join(tmp, 'data');
  const proc = spawn(process.execPath, [cli, 'hub', 'serve', '--port', '0', '--data', data, ...args], {
    env: { PATH: process.env.PATH, HOME: tmp, XDG_STATE_HOME: path.join(tmp, 'state'), XDG_CONFIG_HOME: path.join(tmp, 'config'), ...extraEnv },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await hubReady(proc);
  const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
  const call = hubCaller(url);
  return {
    url,
    pid: proc.pid,
    human,
    call,
    mint: async (label) => {
      const r = await call(human, 'POST', '/v1/account/agents', { label });
      return { id: r.agent.id, token: r.token };
    },
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/**
 * A process's CPU time so far (user + system, ms) and its resident set (MiB), from /proc;
 * null where there is no /proc (the figures are then left out, not guessed).
 */
export function procStats(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
    // USER_HZ is 100 on every Linux the benches run on.
    return { cpuMs: ticks * 10, rssMiB: rssKb / 1024 };
  } catch {
    return null;
  }
}

/** Sample `procStats(pid)` every `everyMs` until stopped; returns the peak RSS seen. */
export function watchRss(pid, everyMs = 20) {
  let peak = 0;
  const timer = setInterval(() => {
    const s = procStats(pid);
    if (s) peak = Math.max(peak, s.rssMiB);
  }, everyMs);
  return { stop: () => (clearInterval(timer), peak) };
}

/** A private HOME and state root for one agent, with its token in the environment (never argv). */
export function agentEnv(hubUrl, agent, session) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-bench-agent-'));
  return {
    tmp,
    env: {
      PATH: process.env.PATH,
      HOME: tmp,
      XDG_STATE_HOME: path.join(tmp, 'state'),
      XDG_CONFIG_HOME: path.join(tmp, 'config'),
      MA2H_HUB_URL: hubUrl,
      MA2H_AGENT_TOKENS: `${agent.id}=${agent.token}`,
      MA2H_AGENT_SESSION_ID: session,
    },
  };
}

/** Run a command to completion; resolves with its exit code and wall time in ms. */
export function timed(cmd, args, env, onStdout) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout.on('data', (d) => onStdout?.(d));
    p.stderr.resume();
    p.once('close', (code) => resolve({ code, ms: performance.now() - t0 }));
  });
}

export const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

export async function until(probe, what, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
