import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  ENTRY_FILES,
  hostName,
  isSameProcessAlive,
  readRecord,
  stampOf,
  watchFiles,
  writeRecord,
  type ConsumerRecord,
  type ConsumerSettings,
  type ProcessStamp,
  type ReaderRecord,
  type StateEntry,
} from '../../../spool/index.js';
import type { Clock } from '../../../util/clock.js';
import { EXIT } from '../../exit-codes.js';
import type { CliIO } from '../../io.js';
import { success, type Outcome } from '../../outcome.js';
import type { LaunchRequest } from '../../spawn/index.js';
import type { Result } from '../../../util/result.js';
import { Heartbeat, judgeHolder, myRecord, type AttendanceEnd } from '../bridge/attendance.js';
import { isReported, parseReportedStop, planConnection, type ReportedStop } from '../bridge/connection.js';
import { ConsumerWatch, type ConsumerEnd } from '../bridge/consumer-watch.js';
import type { ReaderKnobs } from '../bridge/knobs.js';
import { Printer } from '../bridge/printer.js';
import type { StopRequest } from '../bridge/signals.js';
import { consumerDiedOutcome, consumerStopOutcome, displacedOutcome, orphanedOutcome, signalOutcome, stdoutClosedOutcome } from '../bridge/stop-outcome.js';
import { NAME, noPolicyLine, watchEpilogue, watcherRefusal } from './words.js';

/** The file in which readers of an entry note which connection stop they already relayed (shared with the bridge). */
const REPORTED_STOP = 'reported-stop.json';

export interface WatchRun {
  entry: StateEntry;
  address: string;
  /** What the principal leg's connection must run with. */
  wanted: ConsumerSettings;
  waitMs: number;
  io: CliIO;
  stop: StopRequest;
  knobs: ReaderKnobs;
  raw: boolean;
  launch: (req: LaunchRequest) => Promise<Result<{ pid: number }>>;
}

type WaitEnd = { kind: 'records' } | { kind: 'consumer'; end: ConsumerEnd } | { kind: 'deadline' } | { kind: 'signal' } | { kind: 'attendance'; end: AttendanceEnd };

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One run of `oh-hai inbox watch`: the bridge's reader, on the principal leg. The same
 * pieces — the claim on reader.json, the double-forked connection, the printer that moves
 * the cursor only after stdout took each record, the heartbeat — with the principal rules:
 * one watcher per identity per machine (a live one is never displaced), and an epilogue
 * without a lease.
 */
export async function watchPrincipal(run: WatchRun): Promise<Outcome> {
  let heartbeat: Heartbeat | null = null;
  let outcome: Outcome;
  try {
    outcome = await body(run, (h) => (heartbeat = h));
  } finally {
    (heartbeat as Heartbeat | null)?.stop();
  }
  const consumer = run.entry.read('consumer');
  const alive = consumer.state === 'ok' ? isSameProcessAlive(consumer.value) : 'unknown';
  return { ...outcome, after: [...(outcome.after ?? []), ...watchEpilogue(consumer, alive, run.address)] };
}

async function body(run: WatchRun, started: (h: Heartbeat) => void): Promise<Outcome> {
  const { entry, io, knobs } = run;
  const startedMono = io.clock.monotonic();
  const say = (line: string) => io.stderr.write(`${NAME}: ${line}\n`);

  // One watcher per identity per machine: a dead, orphaned, stale or past-deadline holder is replaced; a live one is exit 10.
  const { facts, decision } = judgeHolder(entry, { pid: io.pid, host: hostName(), declared: false }, io.clock, knobs.staleMs);
  if (decision.action === 'refuse') return { exit: EXIT.held, code: 'watcher_held', message: watcherRefusal(facts, run.address, entry.path(ENTRY_FILES.reader)) };
  const record = myRecord({ pid: io.pid, host: hostName(), declared: false }, io.clock, { heartbeatMs: knobs.heartbeatMs, staleMs: knobs.staleMs, deadlineMs: run.waitMs + knobs.graceSeconds * 1000 });
  entry.write('reader', record);
  if (decision.action === 'displace') {
    entry.log(`inbox watch: replaced the previous watcher${decision.pid !== null ? ` pid ${decision.pid}` : ''} (${decision.why})`);
    if (decision.signal && facts.record.state === 'ok') await stopHolder(facts.record.value, io.clock);
  }

  const consumer = entry.read('consumer');
  const plan = planConnection({
    consumer,
    alive: consumer.state === 'ok' ? isSameProcessAlive(consumer.value) : 'unknown',
    reported: readReported(entry),
    running: consumer.state === 'ok' ? runningSettings(entry, consumer.value) : null,
    wanted: run.wanted,
    named: { allowFrom: false, transport: false, interval: false, maxRetries: false },
  });
  let watch: ConsumerWatch;
  switch (plan.kind) {
    case 'conflict':
      return { exit: EXIT.usage, code: 'flag_disagrees_with_connection', message: plan.message };
    case 'report': {
      const failed = await print(new Printer(entry, io.stdout, run.raw, run.stop.requested));
      if (failed) return failed;
      markReported(entry, plan.record);
      return consumerStopOutcome(plan.record, entry.read('session'), io.clock.now(), entry.path(ENTRY_FILES.log));
    }
    case 'adopt':
      say(plan.note);
      watch = new ConsumerWatch(entry, null, null);
      break;
    case 'start': {
      if (plan.note) say(plan.note);
      const launched = await startConsumer(run);
      if (!launched.ok) return { exit: EXIT.internal, code: 'consumer_not_started', message: launched.reason };
      watch = new ConsumerWatch(entry, consumer.state === 'ok' ? consumer.value : null, launched.value);
      break;
    }
  }

  const policy = plan.kind === 'adopt' ? plan.record.policy : run.wanted.allow_from;
  if (policy === null) say(noPolicyLine(run.address));

  let attendanceEnd: AttendanceEnd | null = null;
  let wake: (() => void) | null = null;
  const heartbeat = new Heartbeat(entry, record, io.clock);
  started(heartbeat);
  heartbeat.start(
    knobs.heartbeatMs,
    (end) => {
      attendanceEnd = end;
      wake?.();
    },
    () => wake?.(),
  );

  const printer = new Printer(entry, io.stdout, run.raw, run.stop.requested);
  const failed = await print(printer);
  if (failed) return failed;
  if (printer.printed > 0 || run.stop.requested()) return finished(run, record);

  const remaining = run.waitMs - (io.clock.monotonic() - startedMono);
  const end = await new Promise<WaitEnd>((resolve) => {
    const cleanups: (() => void)[] = [];
    let settled = false;
    const finish = (e: WaitEnd) => {
      if (settled) return;
      settled = true;
      wake = null;
      for (const c of cleanups) c();
      resolve(e);
    };
    const check = () => {
      if (attendanceEnd) return finish({ kind: 'attendance', end: attendanceEnd });
      if (printer.pending()) return finish({ kind: 'records' });
      const ended = watch.ended();
      if (ended) finish({ kind: 'consumer', end: ended });
    };
    cleanups.push(watchFiles(entry.dir, [ENTRY_FILES.spool, ENTRY_FILES.consumer], check));
    const timer = setTimeout(() => finish({ kind: 'deadline' }), Math.max(0, remaining));
    cleanups.push(() => clearTimeout(timer));
    cleanups.push(run.stop.onStop(() => finish({ kind: 'signal' })));
    wake = check;
    check();
  });
  switch (end.kind) {
    case 'deadline':
      return success();
    case 'signal':
      return finished(run, record);
    case 'attendance':
      return end.end.kind === 'displaced' ? displacedOutcome(end.end.by) : orphanedOutcome(end.end.starterPid);
    case 'records':
      return (await print(printer)) ?? finished(run, record);
    case 'consumer': {
      const leftovers = await print(printer);
      if (leftovers) return leftovers;
      const logPath = entry.path(ENTRY_FILES.log);
      if (end.end.kind === 'died') return consumerDiedOutcome(end.end.pid, logPath);
      markReported(entry, end.end.record);
      return consumerStopOutcome(end.end.record, entry.read('session'), io.clock.now(), logPath);
    }
  }
}

async function print(printer: Printer): Promise<Outcome | null> {
  try {
    await printer.printAvailable();
    return null;
  } catch (e) {
    return stdoutClosedOutcome(e);
  }
}

function finished(run: WatchRun, mine: ReaderRecord): Outcome {
  const signal = run.stop.signal;
  if (signal === null) return success();
  const now = run.entry.read('reader');
  if (now.state === 'ok' && (now.value.pid !== mine.pid || now.value.start_time !== mine.start_time)) return displacedOutcome(now.value);
  return signalOutcome(signal);
}

/** SIGTERM a live local holder that no longer attends, and give it a bounded time to finish its record in flight. */
async function stopHolder(holder: ProcessStamp, clock: Clock): Promise<void> {
  try {
    process.kill(holder.pid, 'SIGTERM');
  } catch {
    return;
  }
  const until = clock.monotonic() + 5000;
  while (isSameProcessAlive(holder) === 'alive' && clock.monotonic() < until) await tick(20);
}

function runningSettings(entry: StateEntry, c: ConsumerRecord): ConsumerSettings | null {
  let text: string;
  try {
    text = readFileSync(entry.path(ENTRY_FILES.settings), 'utf8');
  } catch {
    return null;
  }
  // settings_digest is sha256 of the settings.json bytes the connection started with (docs/internals.md).
  if (createHash('sha256').update(text, 'utf8').digest('hex') !== c.settings_digest) return null;
  const s = entry.read('settings');
  return s.state === 'ok' ? s.value : null;
}

async function startConsumer(run: WatchRun): Promise<Result<ProcessStamp>> {
  const { entry, io } = run;
  entry.write('settings', run.wanted);
  const launched = await run.launch({
    execPath: io.self.execPath,
    args: [...io.self.args, '__consumer', '--entry', entry.dir],
    dir: entry.dir,
    logPath: entry.path(ENTRY_FILES.log),
    env: io.env,
  });
  if (!launched.ok) return { ok: false, reason: `could not start the background connection: ${launched.reason}` };
  const stamp = stampOf(launched.value.pid);
  entry.log(`inbox watch: started the background connection pid ${stamp.pid}`);
  io.stderr.write(`${NAME}: started the background connection (pid ${stamp.pid}); it logs to ${entry.path(ENTRY_FILES.log)}\n`);
  return { ok: true, value: stamp };
}

function readReported(entry: StateEntry): ReportedStop | null {
  const r = readRecord(entry.dir, REPORTED_STOP, parseReportedStop);
  return r.state === 'ok' ? r.value : null;
}

function markReported(entry: StateEntry, c: ConsumerRecord): void {
  if (isReported(c, readReported(entry))) return;
  writeRecord(entry.dir, REPORTED_STOP, { pid: c.pid, start_time: c.start_time, stopped_at: c.stopped_at });
}
