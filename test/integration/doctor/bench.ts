import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DoctorReport } from '../../../src/cli/doctor/index.js';
import type { Entry } from '../../../src/hub/contract/types.js';
import {
  openStateDir,
  sessionStateDir,
  Spool,
  stampOf,
  stateKey,
  type ConsumerRecord,
  type ConsumerSettings,
  type ProcessStamp,
  type ReaderRecord,
  type StateDir,
} from '../../../src/spool/index.js';
import type { Clock } from '../../../src/util/clock.js';
import { runOhHai, type RunResult } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hubCall, type TestHub } from '../../helpers/hub.js';
import { consumerRecord, consumerSettings, readerRecord } from '../../helpers/records.js';

/**
 * One agent of a real Hub with its own temp HOME/XDG dirs, a named agent session, and a
 * state entry the test writes the way the consumer and the reader do (src/spool's writers),
 * standing in `sleep` processes for the connection and the reader.
 */
export interface Agent {
  id: string;
  token: string;
}

export interface DoctorRun extends RunResult {
  report: DoctorReport;
}

export class Bench {
  readonly temp: TempEnv;
  readonly env: NodeJS.ProcessEnv;
  readonly dir: string;
  private stateDirHandle: StateDir | null = null;
  private readonly children: ChildProcess[] = [];

  constructor(
    readonly hub: TestHub,
    readonly agent: Agent,
    readonly sessionName: string,
    extraEnv: NodeJS.ProcessEnv = {},
  ) {
    this.temp = tempEnv();
    this.env = {
      ...this.temp.env,
      MA2H_HUB_URL: hub.url,
      MA2H_AGENT_TOKENS: `${agent.id}=${agent.token}`,
      MA2H_AGENT_SESSION_ID: sessionName,
      ...extraEnv,
    };
    this.dir = sessionStateDir(this.env.XDG_STATE_HOME!, stateKey(hub.url, agent.id, sessionName));
  }

  static async create(hub: TestHub, sessionName = 'doctor-test', extraEnv: NodeJS.ProcessEnv = {}): Promise<Bench> {
    return new Bench(hub, await hub.mintAgent('doctor'), sessionName, extraEnv);
  }

  /** The entry, made (0700) on first use by the test — never by doctor. */
  get entry(): StateDir {
    if (!this.stateDirHandle) {
      const opened = openStateDir(this.dir, { create: true });
      if (!opened.ok) throw new Error(opened.reason);
      this.stateDirHandle = opened.value;
    }
    return this.stateDirHandle;
  }

  /** A live process to stand in for the connection or the reader. */
  standIn(): ProcessStamp {
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    this.children.push(child);
    return stampOf(child.pid!);
  }

  /** The stamp of a process that has exited (a dead pid, its start time as recorded while it ran). */
  async deadStamp(): Promise<ProcessStamp> {
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    const stamp = stampOf(child.pid!);
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    return stamp;
  }

  consumer(stamp: ProcessStamp, over: Partial<ConsumerRecord> = {}): ConsumerRecord {
    const now = Date.now();
    const rec = consumerRecord({ ...stamp, started_at: now, heartbeat_at: now, settings_digest: 'staged', ...over });
    this.entry.write('consumer', rec);
    return rec;
  }

  /** A reader started by this test process (alive), beating now, with a deadline well ahead. */
  reader(stamp: ProcessStamp, over: Partial<ReaderRecord> = {}): ReaderRecord {
    const now = Date.now();
    const rec = readerRecord({
      ...stamp,
      starter_pid: process.pid,
      starter_start_time: stampOf(process.pid).start_time,
      started_at: now,
      heartbeat_at: now,
      deadline_at: now + 600_000,
      ...over,
    });
    this.entry.write('reader', rec);
    return rec;
  }

  settings(over: Partial<ConsumerSettings> = {}): void {
    this.entry.write(
      'settings',
      consumerSettings({ hub: this.hub.url, agent_id: this.agent.id, session_key: this.sessionName, name: this.sessionName, ...over }),
    );
  }

  /** Register a real session at the Hub (as the agent) and record it the way the consumer does. */
  async session(leaseSeconds?: number): Promise<string> {
    const res = await hubCall(this.hub, 'POST', '/v1/sessions', {
      token: this.agent.token,
      body: { client_key: `bench-${this.sessionName}`, name: this.sessionName, ...(leaseSeconds !== undefined ? { lease_seconds: leaseSeconds } : {}) },
    });
    if (res.status !== 201 && res.status !== 200) throw new Error(`POST /v1/sessions → ${res.status} ${res.text}`);
    const s = res.body.session as { id: string; address: string; lease_seconds: number; expires_at: string };
    this.entry.write('session', {
      id: s.id,
      address: s.address,
      name: this.sessionName,
      pinned: false,
      lease_seconds: s.lease_seconds,
      expires_at: s.expires_at,
      renewed_at: Date.now(),
      history: [],
    });
    return s.id;
  }

  /** Spool entries as the consumer would, received `agoMs` ago by our clock. */
  spool(texts: string[], sessionId: string, agoMs = 0): void {
    const clock: Clock = { now: () => Date.now() - agoMs, monotonic: () => performance.now() };
    const spool = Spool.open(this.dir, { clock });
    if (!spool.ok) throw new Error(spool.reason);
    spool.value.append(
      texts.map((text, i) => ({
        type: 'entry' as const,
        session: sessionId,
        entry: {
          id: `ent_${this.sessionName}_${Date.now()}_${i}`,
          kind: 'message',
          from: 'agent:agt_peer#sess_peer',
          to: `agent:${this.agent.id}#${sessionId}`,
          created_at: new Date().toISOString(),
          message_id: `msg_${i}`,
          intent: 'notify',
          text,
        } as Entry,
        signature: 't=1,jti=abcdefghijklmnop,alg=hmac-sha256,v1=' + '0'.repeat(64),
      })),
    );
    spool.value.close();
  }

  async doctor(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<DoctorRun> {
    const run = await runOhHai(['doctor', ...args, '--json'], { env: { ...this.env, ...extraEnv } });
    return { ...run, report: parseReport(run) };
  }

  cleanup(): void {
    for (const c of this.children) c.kill('SIGKILL');
    this.temp.cleanup();
  }
}

export function parseReport(run: RunResult): DoctorReport {
  try {
    return JSON.parse(run.stdout) as DoctorReport;
  } catch {
    throw new Error(`doctor printed no JSON envelope (exit ${run.code})\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  }
}

export const byName = (r: DoctorReport): Record<string, { status: string; detail: string; fix?: string; measured?: Record<string, unknown> }> =>
  Object.fromEntries(r.checks.map((c) => [c.name, c]));

export const stepStatuses = (r: DoctorReport): Record<string, string> => Object.fromEntries((r.self_test?.steps ?? []).map((s) => [s.name, s.status]));

/** Every file of an entry: its bytes and its mtime — what "never writes into it" is compared on. */
export function snapshot(dir: string, skip: readonly string[] = []): Map<string, { bytes: string; mtimeMs: number }> {
  const out = new Map<string, { bytes: string; mtimeMs: number }>();
  for (const name of readdirSync(dir).sort()) {
    if (skip.includes(name)) continue;
    const p = path.join(dir, name);
    const st = lstatSync(p);
    out.set(name, { bytes: st.isFile() ? readFileSync(p).toString('base64') : `<${st.isDirectory() ? 'dir' : 'other'}>`, mtimeMs: st.mtimeMs });
  }
  return out;
}
