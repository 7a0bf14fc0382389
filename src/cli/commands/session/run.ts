import { rmSync } from 'node:fs';
import {
  STATE_FILES,
  forgetSession,
  requestStandDown,
  runningConnection,
  stopConnection,
  stoodDownSessions,
  withdrawStandDown,
  type ConsumerRecord,
  type StateDir,
  type StoodDownSession,
} from '../../../spool/index.js';
import { type Coded, EXIT, success, toOutcome, type Outcome } from '../../../core/index.js';
import { type CliIO } from '../../io.js';
import { writeFlushed } from '../../../util/output.js';
import { plain, relayedStop } from '../../../reader/index.js';
import {
  hubFailureError,
  openThisEntry,
  readMessagingKnobs,
  sessionStatus,
  statusEpilogue,
  statusLines,
  withAgentAccess,
  type AgentAccess,
  type AgentFlagValues,
} from '../../messaging/index.js';

export interface CloseOptions extends AgentFlagValues {
  keepConnection?: boolean;
  purge?: boolean;
}

const NAME = 'oh-hai session close';

/**
 * Stand this agent session down, in the product doc's order: stop the background
 * connection, wait for its clean stop, close the session at the Hub, forget the id
 * locally. Closing first would race the connection, which would register a replacement.
 * A running connection is asked to do the last two itself once it has stopped draining,
 * so the stop it records — what a reader waiting on it relays — is the stand-down (15).
 */
export async function runClose(opts: CloseOptions, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess(NAME, opts, io, async (a) => {
    const ts = a.thisSession;
    if (ts.kind === 'none' && ts.key === null)
      return { exit: EXIT.usage, code: 'agent_session_unknown', message: `${ts.why}; name it with --session <name>, as oh-hai bridge was run` };
    const entry = openThisEntry(ts.stateDirPath);
    if (!entry.ok) return toOutcome(entry.error);
    const stateDir = entry.value;
    const out: string[] = [];
    let connection: CloseReport['connection'] = null;
    /** What the next runs do, read once the connection has stopped; `waited`: a reader may have been waiting on it. */
    const next = (waited: boolean): NextRuns => ({ relayed: stateDir ? pendingRelay(stateDir) : null, pinned: ts.key?.pinned ?? null, waited });
    /** The lines for people, or with --json the one document (src/cli/json/outputs.ts SessionClose). */
    const print = (lines: string[], report: Omit<CloseReport, 'connection'>): Promise<void> =>
      writeFlushed(io.stdout, opts.json ? JSON.stringify({ ...report, connection }) + '\n' : lines.join('\n') + '\n');
    const finish = async (lines: string[], closed: StoodDownSession | null): Promise<Outcome> => {
      const { unread, receipts } = stateDir && closed ? unreadRecords(stateDir, closed) : { unread: 0, receipts: 0 };
      if (receipts > 0) lines.push(unreadReceiptsLine(receipts));
      let purged: string | null = null;
      if (opts.purge && stateDir) {
        // A reader that was waiting on the connection may still be writing its last record here.
        rmSync(stateDir.dir, { recursive: true, force: true, maxRetries: 5 });
        lines.push(`cleared this agent session's state entry ${stateDir.dir}`);
        purged = stateDir.dir;
      }
      const stood_down = closed === null ? null : { id: closed.id, address: closed.address, hub_state: closed.hub_state, closed_at: closed.closed_at };
      await print(lines, { stood_down, kept_open: false, unread, purged });
      if (stateDir && closed && unread > 0) io.stderr.write(`${NAME}: ⚠️ ${unreadWarning(stateDir, closed, unread, opts.purge === true)}\n`);
      return success();
    };

    // 1. Stop the connection and wait for its clean stop. Unless kept, it then closes and forgets the session itself.
    const running = stateDir ? runningConnection(stateDir) : ({ kind: 'none', why: 'this agent session has no state entry on this host' } as const);
    if (running.kind === 'elsewhere') {
      const r = running.record;
      return {
        exit: EXIT.held,
        code: 'connection_elsewhere',
        message: `this agent session's background connection runs on ${r.host} (pid ${r.pid}), which this host cannot signal; run oh-hai session close there`,
      };
    }
    if (running.kind === 'local' && stateDir) {
      const standDown = opts.keepConnection !== true;
      const askedAt = io.clock.now();
      // Half the wait for its Hub steps, so its stop is recorded well before this gives up on it.
      if (standDown) requestStandDown(stateDir, running.record, { nowMs: askedAt, budgetMs: knobs.value.stopWaitMs / 2 });
      const stopped = await stopConnection(stateDir, running.record, io.clock, knobs.value.stopWaitMs).finally(() => {
        if (standDown) withdrawStandDown(stateDir);
      });
      if (!stopped.ok) return { exit: EXIT.internal, code: 'connection_did_not_stop', message: stopped.reason };
      const who = `the background connection (pid ${running.record.pid} on ${running.record.host})`;
      connection = { pid: running.record.pid, host: running.record.host };
      const item = standDown ? stoodDownBy(stateDir, stopped.value, askedAt) : null;
      if (item)
        return finish(
          [`stopped ${who}; once it had stopped draining, it stood the session down itself`, hubLine(item), forgotLine(stateDir, item, next(true))],
          item,
        );
      out.push(`stopped ${who}; it stopped cleanly`);
    }

    if (opts.keepConnection) {
      if (running.kind !== 'local') return nothingToStandDown(`no background connection runs for this agent session (${running.why})`);
      out.push(
        ts.kind === 'attached'
          ? `session ${ts.id} stays open: the next oh-hai bridge starts a connection with the current settings and adopts it`
          : 'no session was recorded; the next oh-hai bridge starts a connection with the current settings',
      );
      await print(out, { stood_down: null, kept_open: true, unread: 0, purged: null });
      return success();
    }

    // 2. Close the session at the Hub: the connection is stopped, so nothing registers a replacement.
    if (ts.kind !== 'attached') {
      if (running.kind !== 'local') return nothingToStandDown(ts.why);
      return finish(out, null);
    }
    const closed = await closeAtHub(a, ts, () => io.clock.now());
    if (!closed.ok) {
      const done = out.length > 0 ? `${out.join('; ')}; but ` : '';
      return {
        ...toOutcome(closed.error),
        message: `${done}${closed.error.message}. The session was NOT closed and is still recorded locally: run oh-hai session close again`,
      };
    }
    const item = closed.value;

    // 3. Forget the id locally.
    if (stateDir) forgetSession(stateDir, item);
    if (running.kind !== 'local' && item.hub_state !== 'closed') {
      return nothingToStandDown(`${hubLine(item)}, and no connection ran (${running.why})${stateDir ? '; forgot it locally' : ''}`);
    }
    return finish([...out, hubLine(item), ...(stateDir ? [forgotLine(stateDir, item, next(running.kind === 'local'))] : [])], item);
  });
}

/** `POST /v1/sessions/:id/close`; a 404 is a session the Hub no longer knows, an answer that leaves it active a Hub fault. */
async function closeAtHub(a: AgentAccess, s: { id: string; address: string }, nowMs: () => number): Promise<Coded<StoodDownSession>> {
  const closed = await a.client.closeSession(s.id);
  const item = (hub_state: StoodDownSession['hub_state'], closed_at: string | null): StoodDownSession => ({
    id: s.id,
    address: s.address,
    hub_state,
    closed_at,
    stood_down_at: nowMs(),
  });
  if (closed.ok) {
    const { state, closed_at } = closed.value;
    if (state !== 'active') return { ok: true, value: item(state, closed_at) };
    return {
      ok: false,
      error: { code: 'hub_fault', exit: EXIT.unreachable, message: `the Hub at ${a.hubUrl} answered the close of ${s.id} with the session still active` },
    };
  }
  if (closed.failure.kind === 'http' && closed.failure.status === 404) return { ok: true, value: item('not_found', null) };
  return { ok: false, error: hubFailureError(closed.failure, { hubUrl: a.hubUrl, credential: a.credential.source, doing: `closing session ${s.id}` }) };
}

function nothingToStandDown(why: string): Outcome {
  return { exit: EXIT.noSession, code: 'nothing_to_stand_down', message: `nothing to stand down: ${why}` };
}

/** What the stopped connection stood down, when its stop is that stand-down (and not, say, the Hub's own close arriving first). */
function stoodDownBy(stateDir: StateDir, stopped: ConsumerRecord | null, askedAt: number): StoodDownSession | null {
  if (stopped?.state !== 'stopped' || !(stopped.exit_code === EXIT.stoodDown || stopped.exit_code === EXIT.operatorClosed)) return null;
  const last = stoodDownSessions(stateDir).at(-1);
  return last !== undefined && last.stood_down_at >= askedAt ? last : null;
}

function hubLine(s: StoodDownSession): string {
  switch (s.hub_state) {
    case 'closed':
      return `closed session ${s.id} (${s.address}) at the Hub${s.closed_at ? ` at ${s.closed_at} (Hub's clock)` : ''}: mail still unacknowledged there bounces to its senders`;
    case 'not_found':
      return `the Hub does not know session ${s.id}; nothing to close there`;
    default:
      return `session ${s.id} was already ${s.hub_state.replace(/_/g, ' ')} at the Hub (left unchanged)`;
  }
}

/** What `session close --json` prints: src/cli/json/outputs.ts SessionClose. */
interface CloseReport {
  stood_down: { id: string; address: string; hub_state: StoodDownSession['hub_state']; closed_at: string | null } | null;
  connection: { pid: number; host: string } | null;
  kept_open: boolean;
  unread: number;
  purged: string | null;
}

/**
 * Unread receipts are not unread mail: a receipt only reports on a message this agent sent,
 * cannot bounce (MA2H §12; the reference Hub moves it to the principal mailbox), and
 * `oh-hai messages list` shows the same track. Said plainly, never as a ⚠️.
 */
const unreadReceiptsLine = (n: number): string =>
  `${n === 1 ? '1 receipt' : `${n} receipts`} for mail you sent arrived after the last read and ${n === 1 ? 'was' : 'were'} not printed; nothing bounces for ${n === 1 ? 'it' : 'them'}, and \`oh-hai messages list\` shows the same delivery track`;

/** Records that arrived under the closed session and no reader printed: mail a sender waits on (`unread`), and receipts. */
function unreadRecords(stateDir: StateDir, s: StoodDownSession): { unread: number; receipts: number } {
  const left = stateDir
    .spoolReader()
    .readFrom(stateDir.checkedCursor().cursor)
    .filter((i) => i.record.type === 'entry' && i.record.session === s.id);
  const receipts = left.filter((i) => i.record.type === 'entry' && i.record.entry.kind === 'receipt').length;
  return { unread: left.length - receipts, receipts };
}

/** Mail of the closed session nobody read: it stays, and is replayed as possibly bounced (never as fresh mail). */
function unreadWarning(stateDir: StateDir, s: StoodDownSession, unread: number, purged: boolean): string {
  const [what, was] = unread === 1 ? ['1 record that arrived under it', 'was'] : [`${unread} records that arrived under it`, 'were'];
  const fate = purged
    ? `${was} cleared with the state entry`
    : `${unread === 1 ? 'stays' : 'stay'} in ${stateDir.path(STATE_FILES.spool)}: the next oh-hai bridge prints ${unread === 1 ? 'it' : 'them'} marked POSSIBLY BOUNCED, not as fresh mail`;
  return `${s.id} stood down with unread mail: ${what} ${was} never read and ${fate} — the Hub bounces what was not acknowledged, so the senders may already have had the bounce`;
}

interface NextRuns {
  /** The code of the connection's recorded stop that the next run relays once, if any (relayedStop). */
  relayed: number | null;
  /** The session the key pins: every connection under it asks the Hub for that closed session again. */
  pinned: string | null;
  /** A reader was possibly waiting on the stopped connection, and relays its stop itself. */
  waited: boolean;
}

function pendingRelay(stateDir: StateDir): number | null {
  const consumer = stateDir.read('consumer');
  const reported = stateDir.read('reportedStop');
  return consumer.state === 'ok' ? relayedStop(consumer.value, reported.state === 'ok' ? reported.value : null) : null;
}

/**
 * What the next runs do, as they do it: a recorded stop no reader relayed yet is relayed once
 * (exit 15 for this stand-down, the product doc's table) before a run starts a connection.
 */
function forgotLine(stateDir: StateDir, s: StoodDownSession, n: NextRuns): string {
  const forgot = `forgot ${s.id} locally (${stateDir.dir})`;
  // A pin makes every connection ask the Hub for the closed session again, and it answers 15 (src/consumer/classify.ts).
  const stays = (who: string): string =>
    `a closed session stays closed, so ${who} pinned to ${n.pinned} exits 15 until --session / MA2H_SESSION_ID is cleared or repointed`;
  if (n.pinned !== null && (n.relayed === null || n.relayed === EXIT.stoodDown)) return `${forgot}; ${stays('every oh-hai bridge')}`;
  if (n.relayed === null) return `${forgot}; the next oh-hai bridge registers a new session with a new address`;
  const what = n.relayed === EXIT.stoodDown ? 'this stand-down' : "the connection's recorded stop";
  const unless = n.waited ? ' (unless an oh-hai bridge waiting on the connection relays it first)' : '';
  const then = n.pinned !== null ? stays('every run after it') : 'the run after it registers a new session with a new address';
  return `${forgot}; the next oh-hai bridge exits ${n.relayed} once, relaying ${what}${unless}, and ${then}`;
}

const STATUS_NAME = 'oh-hai session status';

/** `oh-hai session status`: the Hub's view (the authority) beside this host's record, each labelled with whose clock it is. */
export async function runStatus(opts: AgentFlagValues, io: CliIO): Promise<Outcome> {
  const knobs = readMessagingKnobs(io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  return withAgentAccess(STATUS_NAME, opts, io, async (a) => {
    const ts = a.thisSession;
    // Having no session is an answer, not a failure: said on stdout, exit 0 (docs/terminal.md) —
    // unless the entry is one the next bridge run refuses, which would make the answer's "registers one" false.
    if (ts.kind === 'none') {
      const entry = openThisEntry(ts.stateDirPath);
      if (!entry.ok) return toOutcome(entry.error);
      const line = opts.json
        ? JSON.stringify({ session_id: null, hub: null, hub_error: ts.why, local: null })
        : `no session: ${ts.why}; the next oh-hai bridge run registers one`;
      await writeFlushed(io.stdout, line + '\n');
      return { exit: EXIT.ok };
    }
    const now = io.clock.now();
    const status = await sessionStatus(a, ts, knobs.value, now);
    if (!status.ok) return toOutcome(status.error);
    const { view } = status.value;
    if (opts.json) {
      await writeFlushed(io.stdout, JSON.stringify(view) + '\n');
    } else {
      const epilogue = statusEpilogue(status.value, 'as last seen here (renewal age on our clock)', now);
      const head = `session ${plain(ts.id)} · ${plain(ts.address)}`;
      await writeFlushed(io.stdout, [head, ...statusLines(view, epilogue)].join('\n') + '\n');
    }
    if (view.hub === null) {
      return {
        exit: EXIT.noSession,
        code: 'session_not_found',
        message:
          ts.key.pinned === ts.id
            ? `the Hub does not know session ${ts.id}, which ${ts.key.describe} names (${view.hub_error}); check it against \`oh-hai fleet ls --sessions\`, or drop it (oh-hai bridge exits 4 on it)`
            : `the Hub does not know session ${ts.id} (${view.hub_error}); oh-hai bridge registers a new one`,
      };
    }
    return { exit: EXIT.ok };
  });
}
