import {
  cachedLabelsMemo,
  STATE_FILES,
  hostName,
  isSameProcessAlive,
  NotRegularFileError,
  stampOf,
  stopAndWait,
  watchFiles,
  withHandedSettings,
  type ConsumerRecord,
  type ConsumerSettings,
  type DirectoryCacheKey,
  type ProcessStamp,
  type ReaderRecord,
  type RecordRead,
  type ReportedStop,
  type SpoolItem,
  type StateDir,
  sameProcess,
} from '../spool/index.js';
import { type Coded, CONNECTION_KNOBS, EXIT, readKnobs, type Result, success, type Outcome } from '../core/index.js';
import type { Output } from '../util/output.js';
import type { Timers } from '../util/clock.js';
import type { LaunchRequest } from '../spawn/index.js';
import { hotPathRan } from '../util/code-cache.js';
import { stamp, TRACE } from '../util/trace.js';
import { CONSUMER_NODE_FLAGS } from './consumer-flags.js';
import { Heartbeat, judgeHolder, myRecord, displacedBy, noteDisplaced, type AttendanceEnd } from './attendance.js';
import { isReported, planConnection, type ConnectionPlan, type NamedFlags } from './connection.js';
import { ConsumerWatch, type ConsumerEnd, type RetryNotice } from './consumer-watch.js';
import type { ConsumerView } from './epilogue.js';
import type { HolderFacts } from './holder.js';
import { awaitLaunched, LAUNCHED_WAIT_MS, type Launched } from './launched.js';
import { Printer, type Collected } from './printer.js';
import type { StopRequest } from './signals.js';
import { consumerDiedOutcome, consumerStopOutcome, displacedOutcome, orphanedOutcome, signalOutcome, stdoutClosedOutcome } from './stop-outcome.js';

/**
 * The reader's intervals. The heartbeat and the stale bound are the knobs the consumer reads
 * too — both processes must judge a heartbeat alike.
 */
export interface ReaderKnobs {
  heartbeatMs: number;
  staleMs: number;
  /** The declared deadline is the wait bound plus this. */
  graceSeconds: number;
}

export function readReaderKnobs(env: NodeJS.ProcessEnv): Coded<ReaderKnobs> {
  const k = readKnobs(env, [...CONNECTION_KNOBS, 'readerGraceSeconds']);
  if (!k.ok) return k;
  return { ok: true, value: { heartbeatMs: k.value.heartbeatMs, staleMs: k.value.staleHolderSeconds * 1000, graceSeconds: k.value.readerGraceSeconds } };
}

/** How long a displaced live reader gets to finish its record in flight and exit. */
const DISPLACE_WAIT_MS = 5000;

/**
 * What differs between the two readers of a state dir: `oh-hai bridge` on the session
 * leg and `oh-hai inbox watch` on the principal leg. Everything else — the claim on
 * reader.json, one connection per entry, the printer, the wait, the stops — is one loop.
 */
export interface ReaderLeg {
  /** The command, which prefixes every stderr line. */
  name: string;
  /** How this reader names itself in bridge.log. */
  logName: string;
  stateDir: StateDir;
  /** The key came from --session or the environment: a live holder of it is this agent re-running, and is displaced. */
  declared: boolean;
  waitMs: number;
  /** What a connection this run starts runs with: handed to it, which writes settings.json. */
  wanted: ConsumerSettings;
  /** Flags the user named: each asserts what a running connection must use. */
  named: NamedFlags;
  /** How the user stops the running connection when a named flag disagrees with it; the session leg's when absent. */
  stopRunning?: (pid: number) => string;
  /** Resolution's lines for stderr. */
  warnings: readonly string[];
  /** Exit 10 for a live holder this run may not displace. */
  refusal(facts: HolderFacts): Outcome;
  noPolicyLine(): string;
  /** Whose directory cache names the senders in summary lines: read when a line is printed, never fetched. */
  directory: DirectoryCacheKey;
  /** The lines after the stop line (the lease line, and a ⚠️ line when one is warranted), read off the state dir. */
  epilogue(consumer: ConsumerView, nowMs: number): string[];
}

/** What a reading run touches of the outside world (the CLI's CliIO is one). */
export interface ReaderIO {
  stdout: Output;
  stderr: Output;
  env: NodeJS.ProcessEnv;
  clock: Timers;
  /** How to start this same CLI as a child process: the connection this run may start. */
  self: { execPath: string; args: string[] };
  pid: number;
}

/** One reading run on a leg. */
export interface LegRun {
  leg: ReaderLeg;
  io: ReaderIO;
  stop: StopRequest;
  knobs: ReaderKnobs;
  raw: boolean;
  launch: (req: LaunchRequest) => Promise<Result<{ pid: number }>>;
  /** Take the records instead of printing them (the MCP server's oh_hai_read); the caller commits the cursor. */
  collect?: Collected;
}

type WaitEnd =
  | { kind: 'records'; items: SpoolItem[] }
  | { kind: 'consumer'; end: ConsumerEnd }
  | { kind: 'deadline' }
  | { kind: 'signal' }
  | { kind: 'attendance'; end: AttendanceEnd };

const conflictOutcome = (message: string): Outcome => ({ exit: EXIT.usage, code: 'flag_disagrees_with_connection', message });

/** One reading run on a leg: every exit after the entry resolved ends with the leg's epilogue. */
export class Reader {
  private readonly leg: ReaderLeg;
  private readonly stateDir: StateDir;
  private readonly startedMono: number;
  private record: ReaderRecord | null = null;
  private heartbeat: Heartbeat | null = null;
  private attendanceEnd: AttendanceEnd | null = null;
  /** The connection this run started, if it started one. */
  private started: ProcessStamp | null = null;
  /** Re-evaluates the wait; set while waiting, called on every heartbeat. */
  private wake: (() => void) | null = null;
  /** What this run holds open to see whether a file changed (the printers' records, the senders' labels): let go at the end. */
  private readonly held: { close(): void }[] = [];

  constructor(private readonly run: LegRun) {
    this.leg = run.leg;
    this.stateDir = run.leg.stateDir;
    this.startedMono = run.io.clock.monotonic();
  }

  private say(line: string): void {
    this.run.io.stderr.write(`${this.leg.name}: ${line}\n`);
  }

  async execute(): Promise<Outcome> {
    // A closed stdout (EPIPE) fails the write in flight, which the printer turns into its
    // outcome; the stream's 'error' event, emitted after it, must not crash the process. It
    // stays attached: the event can come after this run has returned.
    this.run.io.stdout.on('error', () => undefined);
    let outcome: Outcome;
    try {
      outcome = await this.body();
    } catch (e) {
      this.stateDir.log(`${this.leg.logName}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      outcome = {
        exit: EXIT.internal,
        code: 'internal',
        message: `this is a bug in oh-hai: ${(e as Error).message}. Details: ${this.stateDir.path(STATE_FILES.log)}`,
      };
    } finally {
      this.heartbeat?.stop();
      for (const h of this.held.splice(0)) h.close();
    }
    return { ...outcome, after: [...(outcome.after ?? []), ...this.epilogue()] };
  }

  private epilogue(): string[] {
    const consumer = this.stateDir.read('consumer');
    const alive = consumer.state === 'ok' ? isSameProcessAlive(consumer.value) : 'unknown';
    const s = this.started;
    const started = s && !(consumer.state === 'ok' && sameProcess(consumer.value, s)) ? { pid: s.pid, host: s.host, alive: isSameProcessAlive(s) } : null;
    return this.leg.epilogue({ record: consumer, alive, started }, this.run.io.clock.now());
  }

  private printer(): Printer {
    const { io, raw, stop, collect } = this.run;
    const labels = cachedLabelsMemo(this.leg.directory);
    const printer = new Printer(this.stateDir, io.stdout, raw, stop.requested, collect, () => labels.get());
    this.held.push(labels, printer);
    return printer;
  }

  private async body(): Promise<Outcome> {
    const { leg, io } = this.run;
    for (const w of leg.warnings) this.say(w);

    const claimed = await this.claim();
    if ('refusal' in claimed) return claimed.refusal;

    const consumer = this.stateDir.read('consumer');
    const plan = this.plan(consumer);
    const notice: RetryNotice = { say: (line) => this.say(line), now: () => io.clock.now() };

    let policy: string[] | null;
    let watch: ConsumerWatch;
    switch (plan.kind) {
      case 'conflict':
        return conflictOutcome(plan.message);
      case 'report': {
        const printer = this.printer();
        const failed = await this.print(printer);
        if (failed) return failed;
        this.markReported(plan.record);
        return consumerStopOutcome(plan.record, this.stateDir, io.clock.now());
      }
      case 'adopt':
        this.say(plan.note);
        policy = plan.record.policy;
        watch = new ConsumerWatch(this.stateDir, null, null, notice);
        break;
      case 'start': {
        if (plan.note) this.say(plan.note);
        const baseline = consumer.state === 'ok' ? consumer.value : null;
        const started = await this.startConsumer(leg.wanted);
        if (!started.ok) return { exit: EXIT.internal, code: 'consumer_not_started', message: started.reason };
        const launched = await this.awaitLaunched(started.value, baseline);
        const lost = launched.kind === 'lost' ? this.lostTo(started.value, launched.record) : null;
        if (lost?.kind === 'conflict') return conflictOutcome(lost.message);
        if (lost?.kind === 'adopt') {
          this.say(lost.note);
          policy = lost.record.policy;
          watch = new ConsumerWatch(this.stateDir, null, null, notice);
          break;
        }
        this.say(`started the background connection (pid ${started.value.pid}); it logs to ${this.stateDir.path(STATE_FILES.log)}`);
        // Said once per connection start (doctor's policy check says it too), not on every re-run that adopts it.
        if (leg.wanted.allow_from === null) this.say(leg.noPolicyLine());
        policy = leg.wanted.allow_from;
        watch = new ConsumerWatch(this.stateDir, baseline, started.value, notice);
        break;
      }
    }

    this.heartbeat = new Heartbeat(this.stateDir, claimed.record, io.clock);
    this.heartbeat.start(
      this.run.knobs.heartbeatMs,
      (end) => {
        this.attendanceEnd = end;
        this.wake?.();
      },
      () => this.wake?.(),
    );

    const printer = this.printer();
    const failed = await this.print(printer);
    if (failed) return failed;
    // A transition alone is news about the address, not mail: the run goes on waiting for mail
    // within its bound, so the run after a stand-down prints the new address AND the mail that
    // follows it, not the address in one run and the mail in the next (issue 17, point 8).
    while (printer.mail === 0 && !this.run.stop.requested()) {
      const end = await this.waitForNews(printer, watch);
      switch (end.kind) {
        case 'deadline':
          return success();
        case 'signal':
          return this.finished();
        case 'attendance':
          return end.end.kind === 'displaced' ? displacedOutcome(end.end.by) : orphanedOutcome(end.end.starterPid);
        case 'records': {
          const failedRecords = await this.print(printer, end.items);
          if (failedRecords) return failedRecords;
          // A wake printed: the launcher's code cache, written while this run slept, gets it too.
          hotPathRan();
          break;
        }
        case 'consumer': {
          const failedLeftovers = await this.print(printer);
          if (failedLeftovers) return failedLeftovers;
          if (end.end.kind === 'died') return consumerDiedOutcome(end.end.pid, this.stateDir.path(STATE_FILES.log));
          this.markReported(end.end.record);
          return consumerStopOutcome(end.end.record, this.stateDir, io.clock.now());
        }
      }
    }
    return this.finished();
  }

  /** Print what is after the cursor (`items` when the wait just read them); an Outcome only when stdout failed under us. */
  private async print(printer: Printer, items?: SpoolItem[]): Promise<Outcome | null> {
    try {
      await printer.printAvailable(items);
      return null;
    } catch (e) {
      // A spool that is not a regular file (a FIFO, a symlink) is the entry's fault, not stdout's.
      if (e instanceof NotRegularFileError) return { exit: EXIT.internal, code: 'state_unreadable', message: e.message };
      return stdoutClosedOutcome(e);
    }
  }

  /** The end of a run that printed, or was asked to stop: a signal that came with a displacement is a displacement. */
  private finished(): Outcome {
    const signal = this.run.stop.signal;
    if (signal === null) return success();
    const now = this.stateDir.read('reader');
    if (now.state === 'ok' && this.record && !sameProcess(now.value, this.record)) return displacedOutcome(now.value);
    const by = this.record ? displacedBy(this.stateDir, this.record) : null;
    if (by) return displacedOutcome(by);
    return signalOutcome(signal);
  }

  private async claim(): Promise<{ refusal: Outcome } | { record: ReaderRecord }> {
    const { io, knobs } = this.run;
    const me = { pid: io.pid, host: hostName(), declared: this.leg.declared };
    const { facts, decision } = judgeHolder(this.stateDir, me, io.clock, knobs.staleMs);
    if (decision.action === 'refuse') return { refusal: this.leg.refusal(facts) };
    const record = myRecord(me, io.clock, { heartbeatMs: knobs.heartbeatMs, staleMs: knobs.staleMs, deadlineMs: this.leg.waitMs + knobs.graceSeconds * 1000 });
    this.record = record;
    this.stateDir.write('reader', record);
    if (decision.action !== 'displace') return { record };
    const holder = facts.record.state === 'ok' ? facts.record.value : null;
    // A dead holder is the previous run's record, there after every exit of the re-run loop:
    // logging it would add a line to bridge.log per run and say nothing.
    if (decision.why !== 'dead') {
      this.stateDir.log(`${this.leg.logName}: displaced the previous reader${decision.pid !== null ? ` pid ${decision.pid}` : ''} (${decision.why})`);
    }
    if (decision.why === 'declared' && holder)
      this.say(`took over from this agent session's previous reader (pid ${holder.pid} on ${holder.host}); one reader prints your mail`);
    if (decision.signal && holder) {
      noteDisplaced(this.stateDir, holder, record);
      await this.stopHolder(holder);
      // The holder's last heartbeat may have landed after our claim: claim again once it is gone.
      const after = this.stateDir.read('reader');
      if (after.state !== 'ok' || !sameProcess(after.value, record)) this.stateDir.write('reader', record);
    }
    return { record };
  }

  /**
   * SIGTERM a live local holder and give it a bounded time to finish its record in flight;
   * past that (or when this run is asked to stop) the claim goes on regardless.
   */
  private async stopHolder(holder: ProcessStamp): Promise<void> {
    const asked = new AbortController();
    const unhook = this.run.stop.onStop(() => asked.abort());
    try {
      await stopAndWait(holder.pid, {
        gone: () => isSameProcessAlive(holder) !== 'alive',
        budgetMs: DISPLACE_WAIT_MS,
        clock: this.run.io.clock,
        signal: asked.signal,
      });
    } finally {
      unhook();
    }
  }

  /** One consumer per entry: what this run does about the record it read (connection.ts). */
  private plan(consumer: RecordRead<ConsumerRecord>): ConnectionPlan {
    const { leg } = this;
    return planConnection({
      consumer,
      alive: consumer.state === 'ok' ? isSameProcessAlive(consumer.value) : 'unknown',
      reported: this.readReported(),
      running: consumer.state === 'ok' ? this.runningSettings(consumer.value) : null,
      wanted: leg.wanted,
      named: leg.named,
      ...(leg.stopRunning ? { stopRunning: leg.stopRunning } : {}),
    });
  }

  /** Wait (bounded; a stop request ends it) until the connection this run launched has taken the entry, or another has. */
  private async awaitLaunched(launched: ProcessStamp, baseline: ConsumerRecord | null): Promise<Launched> {
    const asked = new AbortController();
    const unhook = this.run.stop.onStop(() => asked.abort());
    try {
      return await awaitLaunched(this.stateDir, launched, baseline, { clock: this.run.io.clock, boundMs: LAUNCHED_WAIT_MS, signal: asked.signal });
    } finally {
      unhook();
    }
  }

  /**
   * Another run's connection took the entry while this run's started: this run plans against
   * that one, as if it had found it running (adopt, or exit 2 on a named flag it contradicts).
   */
  private lostTo(mine: ProcessStamp, winner: ConsumerRecord): ConnectionPlan {
    this.stateDir.log(`${this.leg.logName}: the background connection pid ${mine.pid} stopped: pid ${winner.pid}, started at the same time, took the entry`);
    this.say(
      `another run started a background connection (pid ${winner.pid}) at the same time, and it took this entry; the one this run started (pid ${mine.pid}) stopped`,
    );
    return this.plan({ state: 'ok', value: winner });
  }

  /** settings.json, when it is the file the running consumer started with (its digest matches). */
  private runningSettings(c: ConsumerRecord): ConsumerSettings | null {
    const s = this.stateDir.readSettings();
    return s.digest === c.settings_digest && s.read.state === 'ok' ? s.read.value : null;
  }

  /**
   * Launch a connection with this run's settings in its environment, not through settings.json:
   * another run may rewrite the file before the connection takes the lock. The connection
   * writes the file itself, under the lock.
   */
  private async startConsumer(wanted: ConsumerSettings): Promise<Result<ProcessStamp>> {
    const { io } = this.run;
    const launched = await this.run.launch({
      execPath: io.self.execPath,
      args: [...CONSUMER_NODE_FLAGS, ...io.self.args, '__consumer', '--entry', this.stateDir.dir],
      dir: this.stateDir.dir,
      logPath: this.stateDir.path(STATE_FILES.log),
      env: withHandedSettings(io.env, wanted),
    });
    if (!launched.ok) return { ok: false, reason: `could not start the background connection: ${launched.reason}` };
    const stamp = stampOf(launched.value.pid);
    this.started = stamp;
    this.stateDir.log(`${this.leg.logName}: started the background connection pid ${stamp.pid}`);
    return { ok: true, value: stamp };
  }

  private readReported(): ReportedStop | null {
    const r = this.stateDir.read('reportedStop');
    return r.state === 'ok' ? r.value : null;
  }

  private markReported(c: ConsumerRecord): void {
    if (isReported(c, this.readReported())) return;
    this.stateDir.write('reportedStop', { pid: c.pid, start_time: c.start_time, stopped_at: c.stopped_at });
  }

  /** Wait (fs.watch on the entry plus the heartbeat as a slow re-check; no busy loop) until something ends the wait. */
  private waitForNews(printer: Printer, watch: ConsumerWatch): Promise<WaitEnd> {
    const { io } = this.run;
    const remaining = this.leg.waitMs - (io.clock.monotonic() - this.startedMono);
    return new Promise((resolve) => {
      let settled = false;
      const cleanups: (() => void)[] = [];
      const finish = (end: WaitEnd) => {
        if (settled) return;
        settled = true;
        this.wake = null;
        resolve(end);
        // After the print, not before it: closing the watch is an inotify_rm_watch, which waits
        // for the kernel's fsnotify grace period (0.2–37 ms measured here). The print runs in the
        // microtasks of this turn, the first of them resumed by `resolve`; even the Immediate is
        // made after it (~18 K instructions of the wake; a promise's reaction, as queueMicrotask
        // would load async_hooks first). A late event meanwhile finds the wait settled.
        void Promise.resolve().then(() =>
          setImmediate(() => {
            for (const c of cleanups) c();
          }),
        );
      };
      const check = () => {
        if (settled) return;
        if (this.attendanceEnd) return finish({ kind: 'attendance', end: this.attendanceEnd });
        // One read of the spool per wake: what it finds is what gets printed.
        const items = printer.available();
        if (items.length > 0) return finish({ kind: 'records', items });
        const ended = watch.ended();
        if (ended) finish({ kind: 'consumer', end: ended });
      };
      const woken = () => {
        if (TRACE) stamp('reader.woken');
        check();
      };
      const watching = watchFiles(this.stateDir.dir, [STATE_FILES.spool, STATE_FILES.consumer], woken, { clock: io.clock });
      cleanups.push(watching);
      cleanups.push(io.clock.setTimer(remaining, () => finish({ kind: 'deadline' })));
      cleanups.push(this.run.stop.onStop(() => finish({ kind: 'signal' })));
      this.wake = check;
      check();
      // Asleep from here: what labels a line is read now, not after the wake, and a wait with
      // time left runs the summary code once so the wake does not compile it.
      if (!settled) {
        printer.prepare({ rehearse: remaining > 0 });
        // Node compiles its own event handler on a watch's first event: on the wait, not the wake.
        if (remaining > 0) watching.rehearse();
        // A wake's finish closes the watch on a setImmediate; the first Immediate of a process sets
        // up its queue (~0.1 ms of the wake, measured): made while there is time, not on the wake.
        if (remaining > 0) setImmediate(() => undefined);
      }
    });
  }
}
