import { rmSync, unlinkSync } from 'node:fs';
import type { Session } from '../../../hub/contract/index.js';
import { ENTRY_FILES, openStateEntry, type ConsumerRecord, type StateEntry } from '../../../spool/index.js';
import { fsyncDir } from '../../../util/fs-durable.js';
import { EXIT } from '../../exit-codes.js';
import { writeFlushed, type CliIO } from '../../io.js';
import { success, toOutcome, type Outcome } from '../../outcome.js';
import { sameProcess } from '../bridge/attendance.js';
import { hubFailureError, readMessagingKnobs, resolveAgentAccess, type AgentFlagValues } from '../messaging/index.js';
import { runningConnection, stopConnection } from './stop-connection.js';

export interface CloseOptions extends AgentFlagValues {
  keepConnection?: boolean;
  purge?: boolean;
}

const NAME = 'oh-hai session close';

/**
 * Stand this agent session down, in the product doc's order: stop the background
 * connection, wait for its clean stop, close the session at the Hub, forget the id
 * locally. Closing first would race the connection, which would register a replacement.
 */
export async function runClose(opts: CloseOptions, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  const access = await resolveAgentAccess(opts, io);
  if (!access.ok) return toOutcome(access.error);
  const a = access.value;
  try {
    for (const w of a.warnings) io.stderr.write(`${NAME}: ${w}\n`);
    const ts = a.thisSession;
    if (ts.kind === 'none' && ts.key === null) return { exit: EXIT.usage, code: 'agent_session_unknown', message: `${ts.why}; name it with --session <name>, as oh-hai bridge was run` };
    const opened = ts.entryDir !== null ? openStateEntry(ts.entryDir, { create: false }) : null;
    const entry = opened?.ok ? opened.value : null;
    const sessionId = ts.kind === 'attached' ? ts.id : null;
    const out: string[] = [];

    // 1. Stop the connection and wait for its clean stop.
    let stopped: ConsumerRecord | null = null;
    const running = entry ? runningConnection(entry) : ({ kind: 'none', why: 'this agent session has no state entry on this host' } as const);
    if (running.kind === 'elsewhere') {
      const r = running.record;
      return {
        exit: EXIT.held,
        code: 'connection_elsewhere',
        message: `this agent session's background connection runs on ${r.host} (pid ${r.pid}), which this host cannot signal; run oh-hai session close there`,
      };
    }
    if (running.kind === 'local' && entry) {
      const s = await stopConnection(entry, running.record, io.clock, knobs.value.stopWaitMs);
      if (!s.ok) return { exit: EXIT.internal, code: 'connection_did_not_stop', message: s.reason };
      stopped = s.value;
      out.push(`stopped the background connection (pid ${running.record.pid} on ${running.record.host}); it stopped cleanly`);
    }

    if (opts.keepConnection) {
      if (running.kind !== 'local') return nothingToStandDown(`no background connection runs for this agent session (${running.why})`);
      out.push(
        sessionId !== null
          ? `session ${sessionId} stays open: the next oh-hai bridge starts a connection with the current settings and adopts it`
          : 'no session was recorded; the next oh-hai bridge starts a connection with the current settings',
      );
      await writeFlushed(io.stdout, out.join('\n') + '\n');
      return success();
    }

    // 2. Close the session at the Hub: the connection is stopped, so nothing registers a replacement.
    if (sessionId === null) {
      if (running.kind !== 'local') return nothingToStandDown(ts.kind === 'none' ? ts.why : 'this agent session holds no session');
    } else {
      const closed = await a.client.closeSession(sessionId);
      if (!closed.ok) {
        const f = closed.failure;
        if (!(f.kind === 'http' && f.status === 404)) {
          const e = hubFailureError(f, { hubUrl: a.hubUrl, credential: a.credential.source, doing: `closing session ${sessionId}` });
          const done = out.length > 0 ? `${out.join('; ')}; but ` : '';
          return { ...toOutcome(e), message: `${done}${e.message}. The session was NOT closed and is still recorded locally: run oh-hai session close again` };
        }
        out.push(`the Hub does not know session ${sessionId} (${f.code}); nothing to close there`);
      } else {
        out.push(closedLine(closed.value));
        if (running.kind !== 'local' && closed.value.state !== 'closed') {
          forget(entry, sessionId);
          return nothingToStandDown(`session ${sessionId} was already ${closed.value.state.replace(/_/g, ' ')} at the Hub and no connection ran (${running.why}); forgot it locally`);
        }
      }
    }

    // 3. Forget the id locally, and let the next reader of this entry hear that it stood down.
    if (entry && sessionId !== null) {
      forget(entry, sessionId);
      if (stopped) recordStandDown(entry, stopped, sessionId, io.clock.now());
      out.push(`forgot ${sessionId} locally (${entry.dir}); the next oh-hai bridge registers a new session with a new address`);
    }
    if (opts.purge && entry) {
      rmSync(entry.dir, { recursive: true, force: true });
      out.push(`cleared this agent session's state entry ${entry.dir}`);
    }
    await writeFlushed(io.stdout, out.join('\n') + '\n');
    return success();
  } finally {
    await a.client.close();
  }
}

function nothingToStandDown(why: string): Outcome {
  return { exit: EXIT.noSession, code: 'nothing_to_stand_down', message: `nothing to stand down: ${why}` };
}

function closedLine(s: Session): string {
  if (s.state === 'closed') {
    return `closed session ${s.id} (${s.address}) at the Hub${s.closed_at ? ` at ${s.closed_at} (Hub's clock)` : ''}: mail still unacknowledged there bounces to its senders`;
  }
  return `session ${s.id} was already ${s.state.replace(/_/g, ' ')} at the Hub (left unchanged)`;
}

/** session.json goes: no later command attaches or presents this id. A pinned id lives in the environment, not here. */
function forget(entry: StateEntry | null, sessionId: string): void {
  if (!entry) return;
  const read = entry.read('session');
  if (read.state === 'ok' && read.value.id !== sessionId) return;
  try {
    unlinkSync(entry.path(ENTRY_FILES.session));
    fsyncDir(entry.dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  entry.log(`session close: forgot ${sessionId}`);
}

/**
 * The stopped connection recorded a clean stop by signal; what happened is a stand-down,
 * which a reader relays as exit 15. Rewritten only while the record is still that stop
 * (same process, same instant), so a connection started since is never overwritten; the
 * new instant makes it a stop no reader has relayed yet, so the next run says it once.
 */
function recordStandDown(entry: StateEntry, stopped: ConsumerRecord, sessionId: string, nowMs: number): void {
  const now = entry.read('consumer');
  if (now.state !== 'ok' || !sameProcess(now.value, stopped) || now.value.stopped_at !== stopped.stopped_at || now.value.state !== 'stopped') return;
  entry.write('consumer', {
    ...now.value,
    exit_code: EXIT.stoodDown,
    stop_reason: 'session_closed',
    stop_message: `this agent stood its session ${sessionId} down (oh-hai session close): the connection stopped and the session was closed at the Hub. Run oh-hai bridge again only if this run should have a new address`,
    stopped_at: nowMs,
  });
}
