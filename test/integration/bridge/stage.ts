import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Entry } from '../../../src/hub/contract/types.js';
import {
  hostName,
  openStateDir,
  processStartTime,
  sessionStateDir,
  Spool,
  spoolLine,
  stampOf,
  stateKey,
  type ConsumerRecord,
  type Cursor,
  type SessionRecord,
  type StateDir,
} from '../../../src/spool/index.js';
import { systemClock } from '../../../src/util/clock.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { consumerRecord } from '../../helpers/records.js';
import { spoolTransition } from '../../helpers/spool.js';

/**
 * A state entry staged by the test, which plays the background connection the way the
 * consumer's own tests play the reader: it writes consumer.json / session.json for a live
 * stand-in process and appends to the spool. Only for properties of the reader itself
 * (printing, the cursor, attendance, signals); the exit-code contract runs the real consumer.
 */
export interface Stage {
  env: NodeJS.ProcessEnv;
  temp: TempEnv;
  stateDir: StateDir;
  agentId: string;
  session: SessionRecord;
  standIn: ChildProcess | null;
  /** Write consumer.json for a live stand-in process (started on first use). */
  consumerRunning(over?: Partial<ConsumerRecord>): ConsumerRecord;
  consumerRecord(over?: Partial<ConsumerRecord>): ConsumerRecord;
  append(entries: Entry[], session?: string): void;
  /**
   * As `append`, but the records' bytes land in two writes `pauseMs` apart: a reader woken by
   * the first finds a partial line (a read beside a write(2) can find one too).
   */
  appendTorn(entries: Entry[], pauseMs: number): Promise<void>;
  appendTransition(from: string, to: string): void;
  cursor(): Cursor;
  cleanup(): void;
}

export const HUB = 'http://127.0.0.1:9';
const SIGNATURE = 't=1,jti=abcdefghijklmnop,alg=hmac-sha256,v1=' + '0'.repeat(64);

let counter = 0;
export function message(text: string, over: Partial<Entry> = {}): Entry {
  counter += 1;
  return {
    id: `ent_${counter}_${Date.now()}`,
    kind: 'message',
    from: 'agent:agt_peer#sess_peer',
    to: 'agent:agt_me#sess_a',
    created_at: '2026-09-18T14:33:07.000Z',
    message_id: `msg_${counter}`,
    intent: 'ask',
    text,
    ...over,
  } as Entry;
}

export function stage(opts: { session?: string | null; env?: NodeJS.ProcessEnv } = {}): Stage {
  const agentId = 'agt_me';
  const sessionKey = opts.session === undefined ? 'agent-1' : opts.session;
  const temp = tempEnv({
    MA2H_HUB_URL: HUB,
    MA2H_AGENT_TOKENS: `${agentId}=tok_${Math.random().toString(36).slice(2)}`,
    OH_HAI_HEARTBEAT_MS: '100',
    ...(sessionKey !== null ? { MA2H_AGENT_SESSION_ID: sessionKey } : {}),
    ...opts.env,
  });
  // No declared key: the reader's host program is this test process (its parent, and not a shell).
  const key = sessionKey ?? `host:${hostName()}:${process.pid}:${processStartTime(process.pid)}`;
  const dir = sessionStateDir(temp.env.XDG_STATE_HOME!, stateKey(HUB, agentId, key));
  const opened = openStateDir(dir, { create: true });
  if (!opened.ok) throw new Error(opened.reason);
  const stateDir = opened.value;
  const now = Date.now();
  const session: SessionRecord = {
    id: 'sess_a',
    address: `agent:${agentId}#sess_a`,
    name: sessionKey,
    pinned: false,
    lease_seconds: 900,
    expires_at: '2026-09-18T14:48:07.000Z',
    renewed_at: now,
    history: [],
  };
  stateDir.write('session', session);
  let standIn: ChildProcess | null = null;
  const s: Stage = {
    env: temp.env,
    temp,
    stateDir,
    agentId,
    session,
    get standIn() {
      return standIn;
    },
    consumerRecord(over = {}) {
      if (!standIn) standIn = spawn('sleep', ['600'], { stdio: 'ignore' });
      const stamp = stampOf(standIn.pid!);
      return consumerRecord({ ...stamp, started_at: now, heartbeat_at: Date.now(), policy: ['any-in-account'], settings_digest: 'stand-in', ...over });
    },
    consumerRunning(over = {}) {
      const rec = s.consumerRecord(over);
      stateDir.write('consumer', rec);
      return rec;
    },
    append(entries, sessionId = 'sess_a') {
      const spool = Spool.open(dir, { clock: systemClock });
      if (!spool.ok) throw new Error(spool.reason);
      spool.value.append(
        entries.map((e) => ({
          type: 'entry' as const,
          session: sessionId,
          entry: e,
          signature: SIGNATURE,
        })),
      );
      spool.value.close();
    },
    async appendTorn(entries, pauseMs) {
      const spool = Spool.open(dir, { clock: systemClock });
      if (!spool.ok) throw new Error(spool.reason);
      const seq = spool.value.lastSeq();
      spool.value.close();
      const at = new Date().toISOString();
      const bytes = Buffer.from(
        entries.map((e, i) => spoolLine(seq + i + 1, at, { type: 'entry', session: 'sess_a', entry: e, signature: SIGNATURE }) + '\n').join(''),
      );
      const cut = 1 + Math.floor((bytes.length - 2) / 2);
      appendFileSync(path.join(dir, 'bridge.ndjson'), bytes.subarray(0, cut));
      await new Promise((r) => setTimeout(r, pauseMs));
      appendFileSync(path.join(dir, 'bridge.ndjson'), bytes.subarray(cut));
    },
    appendTransition(from, to) {
      spoolTransition(dir, {
        from_session: from,
        to_session: to,
        from_address: `agent:${agentId}#${from}`,
        to_address: `agent:${agentId}#${to}`,
        reason: 'session_lapsed',
      });
    },
    cursor() {
      try {
        return JSON.parse(readFileSync(path.join(dir, 'cursor.json'), 'utf8')) as Cursor;
      } catch {
        return { seq: 0, offset: 0 };
      }
    },
    cleanup() {
      standIn?.kill('SIGKILL');
      temp.cleanup();
    },
  };
  return s;
}

/** The seqs of `--raw` lines printed, in order; a last piece without its newline was not printed. */
export const rawSeqs = (stdout: string): number[] =>
  stdout
    .split('\n')
    .slice(0, -1)
    .map((l) => (JSON.parse(l) as { seq: number }).seq);

/** The stderr line the epilogue always starts with. */
export const EPILOGUE = /^oh-hai bridge: lease — /m;
