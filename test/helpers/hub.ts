import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FaultRule } from '../../src/hub/server/faults.js';
import { startOhHai } from './cli.js';
import { tempEnv } from './env.js';
import { reservePort, type PortReservation } from './ports.js';
import { freshDatabase } from './postgres.js';

export type { FaultRule };

/** Which store the suite's Hubs run on: the `postgres` test project sets OH_HAI_TEST_HUB_STORE. */
export const HUB_STORE: 'sqlite' | 'postgres' = process.env.OH_HAI_TEST_HUB_STORE === 'postgres' ? 'postgres' : 'sqlite';

export interface TestHub {
  url: string;
  store: 'sqlite' | 'postgres';
  /** The database (with its password) when the Hub runs on PostgreSQL. */
  databaseUrl: string | null;
  port: number;
  dataDir: string;
  /** Empty for an instance that joined an account another instance made (it has no token file). */
  humanToken: string;
  signingKey: string;
  proc: ChildProcess;
  /** Everything the Hub printed on stdout / stderr so far (across restarts). */
  output(): { stdout: string; stderr: string };
  mintAgent(label?: string): Promise<{ id: string; token: string }>;
  /** Replace the fault rules (only when started with `faults: true`); `[]` clears. */
  faults(rules: FaultRule[]): Promise<void>;
  /** SIGTERM and wait for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Send a signal (default SIGKILL) and wait for the process to be gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Start again on the SAME port (reserved for it until dispose), data dir, signing key and flags. */
  restart(): Promise<void>;
  /** Stop (SIGKILL if still running) and remove the temp dirs this helper made. */
  dispose(): Promise<void>;
}

export interface StartHubOptions {
  /** Extra `hub serve` flags, e.g. `['--lease-min-seconds', '1']`. */
  args?: string[];
  /** Extra environment for the Hub process (e.g. MA2H_AGENT_TOKENS). */
  env?: NodeJS.ProcessEnv;
  /** Start with `--fault-injection`. */
  faults?: boolean;
  /** Reuse a data dir (default: a fresh temp dir removed by dispose()). */
  dataDir?: string;
  /** Default: a random key per helper (passed in the environment, never argv). */
  signingKey?: string;
  /**
   * Run on this PostgreSQL database (another instance's, for cluster tests). Default: on the
   * `postgres` test project a fresh database per Hub, dropped by dispose(); else SQLite.
   */
  database?: string;
}

/** The ready line, as text or as a JSON line's `msg` (`--log-format json`). */
const READY = /^(?:hub: listening on (http:\/\/\S+)|\{.*"msg":"hub: listening on (http:\/\/[^"\s]+)".*\})$/m;
/** The Hub's refusal of a port something listens on (src/cli/commands/hub/run.ts). */
const ADDRESS_IN_USE = /\(exit 2, address_in_use\)/;
const FIRST_START_ATTEMPTS = 5;

/** The Hub exited at its start because its port was taken. */
class PortTaken extends Error {}

/** Start the real `oh-hai hub serve` process on a reserved loopback port (test/helpers/ports.ts). */
export async function startHub(opts: StartHubOptions = {}): Promise<TestHub> {
  const ownDir = opts.dataDir === undefined ? mkdtempSync(path.join(os.tmpdir(), 'oh-hai-hub-')) : null;
  const dataDir = opts.dataDir ?? path.join(ownDir!, 'data');
  const envDir = tempEnv();
  const signingKey = opts.signingKey ?? randomBytes(16).toString('hex');
  const ownDb = opts.database === undefined && HUB_STORE === 'postgres' ? await freshDatabase() : null;
  const databaseUrl = opts.database ?? ownDb?.url ?? null;
  // OH_HAI_HUB_SQLITE_DRIVER passes through, so the Hub tests run on a forced SQLite driver.
  const driver = process.env.OH_HAI_HUB_SQLITE_DRIVER;
  const env: NodeJS.ProcessEnv = {
    ...envDir.env,
    ...(driver ? { OH_HAI_HUB_SQLITE_DRIVER: driver } : {}),
    MA2H_SIGNING_KEY: signingKey,
    ...(databaseUrl !== null ? { OH_HAI_HUB_DATABASE_URL: databaseUrl } : {}),
    ...opts.env,
  };
  const baseArgs = ['hub', 'serve', '--data', dataDir, ...(opts.faults ? ['--fault-injection'] : []), ...(opts.args ?? [])];
  let stdout = '';
  let stderr = '';

  const launch = async (port: number): Promise<{ proc: ChildProcess; url: string }> => {
    const proc = startOhHai([...baseArgs, '--port', String(port)], { env });
    proc.stdin?.end();
    let mine = '';
    let mineErr = '';
    proc.stdout?.setEncoding('utf8');
    proc.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      mineErr += d;
    });
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (d: string) => {
        stdout += d;
        mine += d;
        const m = READY.exec(mine);
        if (m) resolve((m[1] ?? m[2])!);
      };
      proc.stdout?.on('data', onData);
      proc.once('exit', (code, signal) => {
        const message = `oh-hai hub serve exited (${code ?? signal}) before it was ready\nstdout: ${stdout}\nstderr: ${stderr}`;
        reject(ADDRESS_IN_USE.test(mineErr) ? new PortTaken(message) : new Error(message));
      });
    });
    return { proc, url };
  };

  // A reserved port outside the ephemeral range (test/helpers/ports.ts), so restart() finds it
  // free. Only this first start may move to another port: something outside the tests may have
  // taken the drawn one between the reservation's check and the Hub's listen.
  const firstStart = async (): Promise<{ reserved: PortReservation; first: { proc: ChildProcess; url: string } }> => {
    for (let attempt = 1; ; attempt++) {
      const reserved = await reservePort();
      try {
        return { reserved, first: await launch(reserved.port) };
      } catch (e) {
        reserved.release();
        if (!(e instanceof PortTaken) || attempt === FIRST_START_ATTEMPTS) throw e;
      }
    }
  };

  let reserved: PortReservation;
  let first: { proc: ChildProcess; url: string };
  try {
    ({ reserved, first } = await firstStart());
  } catch (e) {
    await ownDb?.drop();
    envDir.cleanup();
    if (ownDir) rmSync(ownDir, { recursive: true, force: true });
    throw e;
  }
  const port = reserved.port;
  // An instance that joined an account another instance made on the same database has no token file.
  const tokenFile = path.join(dataDir, 'human-token');
  const humanToken = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : '';

  const waitExit = (proc: ChildProcess): Promise<number | null> =>
    proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve(proc.exitCode) : new Promise((resolve) => proc.once('exit', (code) => resolve(code)));

  const call = async (method: string, p: string, body: unknown): Promise<unknown> => {
    const res = await fetch(hub.url + p, {
      method,
      headers: { authorization: `Bearer ${humanToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${p} → ${res.status} ${text}`);
    return JSON.parse(text) as unknown;
  };

  const hub: TestHub = {
    url: first.url,
    store: databaseUrl === null ? 'sqlite' : 'postgres',
    databaseUrl,
    port,
    dataDir,
    humanToken,
    signingKey,
    proc: first.proc,
    output: () => ({ stdout, stderr }),
    async mintAgent(label = 'test-agent') {
      const res = (await call('POST', '/v1/account/agents', { label })) as { agent: { id: string }; token: string };
      return { id: res.agent.id, token: res.token };
    },
    async faults(rules) {
      await call('POST', '/v1/_faults', { rules });
    },
    async stop() {
      hub.proc.kill('SIGTERM');
      return waitExit(hub.proc);
    },
    async kill(signal = 'SIGKILL') {
      hub.proc.kill(signal);
      await waitExit(hub.proc);
    },
    async restart() {
      if (hub.proc.exitCode === null && hub.proc.signalCode === null) await hub.stop();
      const next = await launch(port);
      hub.proc = next.proc;
      hub.url = next.url;
    },
    async dispose() {
      if (hub.proc.exitCode === null && hub.proc.signalCode === null) await hub.kill('SIGKILL');
      reserved.release();
      await ownDb?.drop();
      envDir.cleanup();
      if (ownDir) rmSync(ownDir, { recursive: true, force: true });
    },
  };
  return hub;
}

export interface CallResult {
  status: number;
  /** Parsed JSON body (undefined when empty or not JSON); loosely typed on purpose, since tests assert on raw wire JSON. */
  body: any;
  text: string;
  headers: Headers;
}

/** One HTTP call to a Hub: JSON in, JSON out, the bearer only in the Authorization header. */
export async function hubCall(
  base: string | { url: string },
  method: string,
  p: string,
  opts: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch((typeof base === 'string' ? base : base.url) + p, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

/** A new agent on `hub` and a session of its (`client_key`, a 300 s lease): the agent's token and the session's id. */
export async function openSession(hub: TestHub, label: string, clientKey: string): Promise<{ token: string; sessionId: string }> {
  const agent = await hub.mintAgent(label);
  const r = await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: clientKey, lease_seconds: 300 } });
  if (r.status !== 201) throw new Error(`POST /v1/sessions → ${r.status} ${r.text}`);
  return { token: agent.token, sessionId: (r.body as { session: { id: string } }).session.id };
}

/** One scrape of a Hub's /metrics (it was started with --admin-listen): a figure by name, with its labels if any. */
export async function scrapeMetrics(hub: TestHub): Promise<(name: string) => number> {
  // The last start's: a restarted Hub's admin listener (`127.0.0.1:0`) is on another port.
  const admin = [...hub.output().stdout.matchAll(/^hub: admin \(healthz, readyz, metrics\) at (\S+)$/gm)].at(-1)?.[1];
  if (admin === undefined) throw new Error('the Hub was not started with --admin-listen');
  const text = await (await fetch(`${admin}/metrics`)).text();
  return (name) => {
    const line = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
    if (!line) throw new Error(`/metrics has no ${name}:\n${text}`);
    return Number(line[1]);
  };
}
