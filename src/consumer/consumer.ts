import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { EXIT } from '../cli/exit-codes.js';
import { parsePolicy, policyAdmits, policyItems, resolveAgentCredential, type Policy } from '../config/index.js';
import {
  chooseTransport,
  formatAddress,
  replayWindowSeconds,
  type Capability,
  type ConsumerIdentity,
} from '../hub/contract/index.js';
import { HubClient } from '../hub/client/index.js';
import {
  acquireLock,
  ENTRY_FILES,
  hostName,
  isSameProcessAlive,
  Ledger,
  openStateEntry,
  redact,
  SeenJti,
  selfStamp,
  Spool,
  watchFiles,
  type ConsumerRecord,
  type ConsumerSettings,
  type HeldLock,
  type StateEntry,
} from '../spool/index.js';
import type { Clock } from '../util/clock.js';
import { formatDuration } from '../util/duration.js';
import { Acker } from './acker.js';
import { readerAttendance, UnattendedClock } from './attendance.js';
import { Serial, sleep } from './async.js';
import { RetryBudget } from './backoff.js';
import { classifyClosed, classifyFailure, type Disposition, type FailureContext } from './classify.js';
import { consumerHome } from './home.js';
import { Ingest, lockLost } from './ingest.js';
import { readKnobs, type ConsumerKnobs } from './knobs.js';
import { SessionKeeper } from './session.js';
import { stop, type Stop } from './stops.js';
import type { ClockReading, VerifyContext } from './verify.js';

export interface ConsumerOptions {
  dir: string;
  mode: 'auto' | 'direct';
  env: NodeJS.ProcessEnv;
  clock: Clock;
  pid: number;
  /** Direct mode logs here as well as to bridge.log. */
  stderr: NodeJS.WritableStream | null;
  /** Aborted from outside (SIGTERM, SIGINT): a clean stop. The reason names the signal. */
  shutdown: AbortSignal;
  version: string;
  /** Direct mode with --session resolved its own settings: written to settings.json once the lock is ours. */
  settings?: ConsumerSettings | null;
  random?: () => number;
}

/**
 * How a consumer ended. `stopped` was recorded in consumer.json before returning;
 * `refused` never took the entry (no entry, or another consumer holds it) and wrote nothing.
 */
export type ConsumerEnd = { kind: 'stopped'; stop: Stop } | { kind: 'refused'; stop: Stop };

const LOCK_STALE_MS = 10_000;

/** Run one consumer on one state entry until it stops. Never throws for an expected condition. */
export async function runConsumer(opts: ConsumerOptions): Promise<ConsumerEnd> {
  const knobs = readKnobs(opts.env);
  if (!knobs.ok) return { kind: 'refused', stop: stop(knobs.error.exit, 'bad_settings', knobs.error.message) };
  const opened = openStateEntry(opts.dir, { create: false, log: { clock: opts.clock, pid: opts.pid } });
  if (!opened.ok) {
    return { kind: 'refused', stop: stop(EXIT.usage, 'bad_settings', `--entry ${opts.dir}: ${opened.reason}; the reader (oh-hai bridge) creates the entry and starts the consumer`) };
  }
  const entry = opened.value;
  let compromisedBy: string | null = null;
  const take = () =>
    acquireLock(entry.dir, ENTRY_FILES.consumerLock, {
      staleMs: LOCK_STALE_MS,
      clock: opts.clock,
      onCompromised: (err) => {
        compromisedBy = err.message;
      },
    });
  let locked = await take();
  if (!locked.ok && locked.code === 'held' && holderIsDead(entry)) {
    // A consumer killed with -9 leaves a fresh-looking lock for up to LOCK_STALE_MS; its record
    // (written right after it took the lock) says by pid and start time that it is gone.
    entry.log(`consumer.lock is held by a consumer that no longer exists; taking it over`);
    rmSync(entry.path(ENTRY_FILES.consumerLock), { recursive: true, force: true });
    locked = await take();
  }
  if (!locked.ok) return { kind: 'refused', stop: refusal(entry, opts, locked.reason) };
  if (opts.settings) entry.write('settings', opts.settings);
  const consumer = new Consumer(entry, locked.lock, knobs.value, opts, () => compromisedBy);
  return { kind: 'stopped', stop: await consumer.run() };
}

function holderIsDead(entry: StateEntry): boolean {
  const rec = entry.read('consumer');
  return rec.state === 'ok' && isSameProcessAlive(rec.value) === 'dead';
}

/** Another consumer holds the entry: say who, from its record, without touching that record. */
function refusal(entry: StateEntry, opts: ConsumerOptions, reason: string): Stop {
  const rec = entry.read('consumer');
  const holder =
    rec.state === 'ok'
      ? `pid ${rec.value.pid} on ${rec.value.host}, ${rec.value.state} since ${new Date(rec.value.started_at).toISOString()}, heartbeat ${formatDuration(opts.clock.now() - rec.value.heartbeat_at)} ago`
      : rec.state === 'absent'
        ? 'no consumer record yet (it is starting)'
        : `its record could not be read (${rec.reason})`;
  const message = `another consumer already drains this entry (${holder}); ${reason}. Leave it running: the reader adopts it`;
  entry.log(`refused to start: ${message}`);
  opts.stderr?.write(`oh-hai __consumer: ${message}\n`);
  return stop(opts.mode === 'direct' ? EXIT.held : EXIT.ok, 'consumer_running', message);
}

const settingsFailure = (message: string): Stop => stop(EXIT.usage, 'bad_settings', message);

class Consumer {
  private readonly abort = new AbortController();
  private stopped: Stop | null = null;
  private readonly serial = new Serial();
  private readonly startedAt: number;
  private record: ConsumerRecord;
  private token: string | null = null;
  private settings: ConsumerSettings | null = null;
  private client: HubClient | null = null;
  private cap: Capability | null = null;
  private clockReading: ClockReading | null = null;
  /** Intervals and watchers, undone first when stopping. */
  private timers: (() => void)[] = [];
  /** Open files, closed once the serial queue is idle. */
  private closers: (() => void)[] = [];
  /** The ack round in flight, if any, and whether another was asked for meanwhile. */
  private flushing: Promise<void> | null = null;
  private flushAgain = false;
  private budget: RetryBudget | null = null;
  private keeper: SessionKeeper | null = null;

  constructor(
    private readonly entry: StateEntry,
    private readonly lock: HeldLock,
    private readonly knobs: ConsumerKnobs,
    private readonly opts: ConsumerOptions,
    private readonly compromisedBy: () => string | null,
  ) {
    this.startedAt = opts.clock.now();
    this.record = {
      ...selfStamp(opts.pid),
      mode: opts.mode,
      started_at: this.startedAt,
      heartbeat_at: this.startedAt,
      transport: null,
      policy: null,
      settings_digest: '',
      state: 'starting',
      exit_code: null,
      stop_reason: null,
      stop_message: null,
      stopped_at: null,
    };
  }

  log(text: string): void {
    const deny = this.token ? [this.token] : [];
    this.entry.log(redact(text, deny));
    this.opts.stderr?.write(`oh-hai __consumer: ${redact(text, deny)}\n`);
  }

  private get signal(): AbortSignal {
    return this.abort.signal;
  }

  stopWith(s: Stop): void {
    if (this.stopped) return;
    this.stopped = s;
    this.abort.abort();
  }

  private writeRecord(): void {
    this.entry.write('consumer', this.record);
  }

  async run(): Promise<Stop> {
    const onShutdown = () => this.stopWith(stop(EXIT.ok, 'signal', `stopped by ${String(this.opts.shutdown.reason ?? 'a signal')}: a clean stop, the session stays open`));
    if (this.opts.shutdown.aborted) onShutdown();
    else this.opts.shutdown.addEventListener('abort', onShutdown, { once: true });
    try {
      this.writeRecord();
      this.log(`consumer starting (pid ${this.opts.pid}, mode ${this.opts.mode})`);
      const ready = this.stopped ? null : await this.prepare();
      if (ready) await this.drive(ready);
    } catch (e) {
      this.stopWith(stop(EXIT.internal, 'internal_error', `this is a bug in oh-hai: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
    } finally {
      this.opts.shutdown.removeEventListener('abort', onShutdown);
    }
    return this.finish();
  }

  /** Settings, credential, state files: everything before the first Hub call that can fail locally. */
  private async prepare(): Promise<Running | null> {
    const settings = this.readSettings();
    if (!settings) return null;
    const policy = parsePolicy(settings.allow_from ?? []);
    if (!policy.ok) {
      this.stopWith(settingsFailure(`settings.json allow_from: ${policy.reason}`));
      return null;
    }
    const enforced: Policy | null = settings.allow_from === null ? null : policy.value;
    this.record = { ...this.record, policy: enforced === null ? null : policyItems(enforced) };
    this.writeRecord();

    const stateRoot = path.resolve(this.entry.dir, '..', '..', '..', '..');
    const cred = resolveAgentCredential({ env: this.opts.env, hubUrl: settings.hub, stateRoot, ...(settings.agent !== null ? { agent: settings.agent } : {}) });
    if (!cred.ok) {
      this.stopWith(stop(cred.error.exit, 'no_credential', `${cred.error.message} (the consumer re-resolves its own credential from config and its environment)`));
      return null;
    }
    this.token = cred.value.token;
    const identity: ConsumerIdentity = { home: consumerHome(this.entry.dir), host: hostName(), pid: this.opts.pid };
    this.client = new HubClient({ baseUrl: settings.hub, token: cred.value.token, consumer: identity, userAgent: `oh-hai/${this.opts.version} consumer` });
    const agentId = cred.value.agentId ?? (await this.whoami());
    if (agentId === null) return null;
    if (agentId !== settings.agent_id) {
      this.stopWith(
        stop(EXIT.auth, 'credential_mismatch', `the credential in this environment acts as agent ${agentId}, but this state entry belongs to agent ${settings.agent_id}; run the consumer with that agent's credential (or --agent ${settings.agent_id})`),
      );
      return null;
    }
    const state = this.openState();
    if (!state) return null;
    return { settings, policy: enforced, agentId, identity, ...state };
  }

  private readSettings(): ConsumerSettings | null {
    const read = this.entry.read('settings');
    if (read.state !== 'ok') {
      const why = read.state === 'absent' ? 'it does not exist' : read.reason;
      this.stopWith(settingsFailure(`cannot read ${this.entry.path(ENTRY_FILES.settings)}: ${why}; the reader writes it before starting a consumer`));
      return null;
    }
    this.settings = read.value;
    let digest = '';
    try {
      digest = createHash('sha256').update(readFileSync(this.entry.path(ENTRY_FILES.settings))).digest('hex');
    } catch {
      // Read a moment ago; a digest of nothing says the file changed under us.
    }
    this.record = { ...this.record, settings_digest: digest };
    return read.value;
  }

  private async whoami(): Promise<string | null> {
    for (;;) {
      const r = await this.client!.whoami(this.signal);
      if (r.ok) {
        if (r.value.kind === 'agent') return r.value.agent.id;
        this.stopWith(stop(EXIT.auth, 'forbidden', 'the credential in this environment is a human token; the consumer needs an agent token'));
        return null;
      }
      if (!(await this.handle(classifyFailure(r.failure, { operation: 'whoami', sessionId: null, pinned: null })))) return null;
    }
  }

  private openState(): { spool: Spool; ledger: Ledger; seen: SeenJti } | null {
    const spool = this.entry.openSpool(this.opts.clock);
    if (!spool.ok) {
      this.stopWith(stop(EXIT.internal, 'spool_write_failed', spool.reason));
      return null;
    }
    const ledger = Ledger.open(this.entry.dir);
    if (!ledger.ok) {
      spool.value.close();
      this.stopWith(stop(EXIT.internal, 'spool_write_failed', ledger.reason));
      return null;
    }
    if (ledger.value.recovery) this.log(`ledger recovered: cut ${ledger.value.recovery.cutBytes} bytes at byte ${ledger.value.recovery.cutAt}`);
    const seen = SeenJti.load(this.entry.dir);
    if (!seen.ok) {
      spool.value.close();
      ledger.value.close();
      this.stopWith(
        stop(EXIT.internal, 'state_unreadable', `${seen.reason}; without it a replayed delivery could pass, so the consumer will not start. Remove ${this.entry.path(ENTRY_FILES.seenJti)} once you have checked nothing else in the entry is damaged`),
      );
      return null;
    }
    this.closers.push(() => spool.value.close(), () => ledger.value.close());
    return { spool: spool.value, ledger: ledger.value, seen: seen.value };
  }

  /**
   * Apply a disposition. Returns true when the caller should carry on (a fault was waited
   * out, or a lapsed session replaced), false when the consumer is stopping.
   */
  private async handle(d: Disposition): Promise<boolean> {
    if (this.stopped) return false;
    switch (d.kind) {
      case 'stop':
        this.stopWith(d.stop);
        return false;
      case 'reregister': {
        if (!this.keeper) {
          this.stopWith(stop(EXIT.internal, 'internal_error', `this is a bug in oh-hai: asked to replace a session on the principal leg (${d.message})`));
          return false;
        }
        this.log(`${d.message}: registering a new session under the same name`);
        const keeper = this.keeper;
        const replaced = await this.serial.run(() => keeper.replace(d.reason));
        return replaced.ok ? true : this.handle(replaced.disposition);
      }
      case 'fault': {
        const budget = this.budget ?? (this.budget = this.newBudget());
        const decision = budget.fault(d.retryAfterSeconds);
        if (decision.kind === 'exhausted') {
          this.stopWith(
            stop(
              EXIT.unreachable,
              'unreachable',
              `the Hub at ${this.settings?.hub ?? '?'} is unreachable: ${decision.attempts + 1} attempts failed in a row (max_retries ${this.settings?.max_retries ?? '?'}); last: ${d.message}. Nothing is lost: unacknowledged mail stays at the Hub`,
            ),
          );
          return false;
        }
        this.log(`${d.message}; retry ${decision.attempt} of ${this.settings?.max_retries ?? '?'} in ${Math.round(decision.delayMs)} ms`);
        await sleep(decision.delayMs, this.signal);
        return !this.stopped;
      }
    }
  }

  private newBudget(): RetryBudget {
    return new RetryBudget(
      { maxRetries: this.settings?.max_retries ?? 8, minMs: this.knobs.backoffMinMs, maxMs: this.knobs.backoffMaxMs },
      this.opts.random,
    );
  }

  /**
   * Read the Hub's clock against ours at the moment of reading. The capability's
   * server_time (millisecond precision) is the reading; a Date header (whole seconds)
   * stands in only when the Hub sent no server_time.
   */
  private noteServerTime(instant: string | null, source: 'server_time' | 'date'): void {
    if (instant === null || (source === 'date' && this.clockReading?.source.startsWith('the Hub\'s server_time'))) return;
    const hub = Date.parse(instant);
    if (Number.isNaN(hub)) return;
    const label = source === 'server_time' ? "the Hub's server_time" : "the Hub's Date header";
    this.clockReading = { offsetMs: hub - this.opts.clock.now(), source: `${label} at ${instant}` };
  }

  private async drive(r: Running): Promise<void> {
    const { settings } = r;
    this.budget = this.newBudget();
    this.keeper =
      settings.leg === 'session'
        ? new SessionKeeper({
            client: this.client!,
            entry: this.entry,
            spool: r.spool,
            clock: this.opts.clock,
            log: (t) => this.log(t),
            pinned: settings.pinned,
            name: settings.name,
            clientKey: path.basename(this.entry.dir),
            consumer: r.identity,
            signal: this.signal,
          })
        : null;
    const keeper = this.keeper;
    const ingest = new Ingest({ spool: r.spool, ledger: r.ledger, seen: r.seen, log: (t) => this.log(t), lockHealthy: () => this.lockHealthy() });
    const acker = new Acker({
      client: this.client!,
      ledger: r.ledger,
      entry: this.entry,
      currentSession: () => keeper?.current?.id ?? null,
      pinned: settings.pinned,
      renewed: (lease) => keeper?.renewed(lease),
      log: (t) => this.log(t),
      signal: this.signal,
    });
    const flush = () => this.scheduleFlush(acker);
    this.startTimers(r, flush);

    const deliver = (raws: readonly unknown[], session: string | null): Promise<number> =>
      this.serial.run(async () => {
        if (this.stopped || raws.length === 0) return 0;
        const address = session === null ? formatAddress(r.agentId) : (keeper?.current?.address ?? formatAddress(r.agentId, session));
        const result = ingest.run(raws, { session, address }, this.verifyContext(r, session));
        if (!result.ok) {
          this.stopWith(result.stop);
          return 0;
        }
        if (!this.lockHealthy()) {
          this.stopWith(lockLost());
          return 0;
        }
        flush();
        return result.spooled;
      });

    while (!this.stopped) {
      if (this.cap === null) {
        const cap = await this.readCapability(settings);
        if (cap === null) continue;
        const transport = settings.leg === 'principal' ? 'poll' : chooseTransport(cap, settings.transport);
        this.record = { ...this.record, transport };
        this.writeRecord();
        this.log(`Hub ${settings.hub} speaks MA2H ${cap.version}; transport ${transport}${settings.leg === 'principal' ? ' (principal drain)' : ''}`);
        continue;
      }
      if (keeper && keeper.current === null) {
        const established = await this.serial.run(() => keeper.establish());
        if (!established.ok) await this.handle(established.disposition);
        else flush();
        continue;
      }
      const outcome =
        keeper === null
          ? await this.principalRound(settings, deliver)
          : this.record.transport === 'sse'
            ? await this.streamRound(keeper, deliver)
            : await this.pollRound(settings, keeper, deliver);
      if (outcome !== null) await this.handle(outcome);
    }
  }

  /** The capability (also kept in `cap`); null after a stop or a fault waited out (the caller loops). */
  private async readCapability(settings: ConsumerSettings): Promise<Capability | null> {
    const r = await this.client!.capability(this.signal);
    if (r.ok) {
      this.cap = r.value;
      this.noteServerTime(r.value.server_time, 'server_time');
      return r.value;
    }
    if (r.failure.kind === 'protocol') {
      this.stopWith(
        stop(
          EXIT.usage,
          'hub_unsupported',
          `the Hub at ${settings.hub} cannot be used: ${r.failure.message}. A retry will not change that; point oh-hai at an MA2H 0.5+ Hub (--hub, MA2H_HUB_URL or [hub] url)`,
        ),
      );
      return null;
    }
    await this.handle(classifyFailure(r.failure, { operation: 'read capability', sessionId: null, pinned: null }));
    return null;
  }

  private verifyContext(r: Running, session: string | null): VerifyContext {
    return {
      agentId: r.agentId,
      leg: session === null ? { leg: 'principal' } : { leg: 'session', sessionId: session },
      replayWindowSeconds: this.replayWindow(),
      signatureAlgs: this.cap?.signature_algs ?? ['hmac-sha256'],
      nowMs: this.opts.clock.now(),
      clock: this.clockReading,
      seen: (jti) => r.seen.has(jti),
      admit: (e) => policyAdmits(r.policy, e, { agentId: r.agentId }),
    };
  }

  private replayWindow(): number {
    return this.knobs.replayWindowSeconds ?? (this.cap ? replayWindowSeconds(this.cap) : 300);
  }

  private connected(): void {
    this.budget?.succeeded();
    if (this.record.state !== 'running') {
      this.record = { ...this.record, state: 'running' };
      this.writeRecord();
    }
  }

  private context(operation: string, sessionId: string | null): FailureContext {
    return { operation, sessionId, pinned: this.settings?.pinned ?? null };
  }

  private async streamRound(keeper: SessionKeeper, deliver: Deliver): Promise<Disposition | null> {
    const sid = keeper.current!.id;
    const end = await this.client!.openStream(sid, {
      signal: this.signal,
      capability: this.cap,
      onOpen: (ev, serverDate) => {
        this.connected();
        this.noteServerTime(serverDate, 'date');
        keeper.renewed({ id: ev.session, expires_at: ev.expires_at, lease_seconds: ev.lease_seconds });
      },
      onEntries: async (ev) => {
        await deliver(ev.messages, sid);
      },
    });
    if (this.stopped) return null;
    switch (end.kind) {
      case 'hold_bound':
        return null;
      case 'closed':
        return classifyClosed(end.reason, this.context('stream', sid));
      case 'eof':
        return { kind: 'fault', message: `stream on ${sid}: the connection ended without a reconnect or closed event (dropped mid-hold)`, retryAfterSeconds: null };
      case 'failure':
        return classifyFailure(end.failure, this.context('stream connect', sid));
    }
  }

  private async pollRound(settings: ConsumerSettings, keeper: SessionKeeper, deliver: Deliver): Promise<Disposition | null> {
    const sid = keeper.current!.id;
    const r = await this.client!.drain({ session: sid, signal: this.signal });
    if (this.stopped) return null;
    if (!r.ok) return classifyFailure(r.failure, this.context('drain', sid));
    this.connected();
    this.noteServerTime(r.serverDate, 'date');
    if (r.value.session) keeper.renewed(r.value.session);
    const fresh = await deliver(r.value.messages, sid);
    // A drain that brought new mail may have left more behind the batch limit: drain again at once.
    if (fresh === 0) await sleep(settings.interval_seconds * 1000, this.signal);
    return null;
  }

  private async principalRound(settings: ConsumerSettings, deliver: Deliver): Promise<Disposition | null> {
    const started = this.opts.clock.monotonic();
    const wait = this.cap?.inbound.max_wait_seconds ?? 25;
    const r = await this.client!.drain({ wait, signal: this.signal });
    if (this.stopped) return null;
    if (!r.ok) return classifyFailure(r.failure, this.context('principal drain', null));
    this.connected();
    this.noteServerTime(r.serverDate, 'date');
    const fresh = await deliver(r.value.messages, null);
    // The interval is a floor under a Hub that answers at once (an unacknowledged entry is
    // handed back immediately), not a pause after a held drain.
    const elapsed = this.opts.clock.monotonic() - started;
    if (fresh === 0) await sleep(settings.interval_seconds * 1000 - elapsed, this.signal);
    return null;
  }

  private lockHealthy(): boolean {
    return this.compromisedBy() === null && this.lock.check();
  }

  /**
   * Acks run beside the serial queue, one round at a time: ingest never waits for the Hub's
   * answer to an ack, and a burst of requests (cursor moves, batches) costs one more round,
   * not one each. Safe beside ingest because every ledger call is synchronous and an ack
   * round only names entries the ledger already held when the round began.
   */
  private scheduleFlush(acker: Acker): void {
    if (this.stopped) return;
    if (this.flushing) {
      this.flushAgain = true;
      return;
    }
    this.flushing = (async () => {
      try {
        do {
          this.flushAgain = false;
          await this.flushNow(acker);
        } while (this.flushAgain && !this.stopped);
      } catch (e) {
        // A ledger write that failed after the Hub confirmed an ack: never retried (fsyncgate).
        this.stopWith(stop(EXIT.internal, 'spool_write_failed', `${e instanceof Error ? e.message : String(e)}; stopping without acking anything more`));
      } finally {
        this.flushing = null;
      }
    })();
  }

  private async flushNow(acker: Acker): Promise<void> {
    if (this.stopped) return;
    if (!this.lockHealthy()) {
      this.stopWith(lockLost());
      return;
    }
    const r = await acker.flush();
    if (r.ok || this.stopped) return;
    const d = r.disposition;
    if (d.kind === 'stop') this.stopWith(d.stop);
    // A failed ack changes nothing on disk; the next flush (cursor move or heartbeat) retries it.
    else this.log(`${d.message}; the ack is retried on the next flush`);
  }

  private startTimers(r: Running, flush: () => void): void {
    const unattended = new UnattendedClock(this.startedAt, r.settings.unattended_max_seconds * 1000);
    const beat = setInterval(() => this.heartbeat(r, unattended, flush), this.knobs.heartbeatMs);
    const unwatch = watchFiles(this.entry.dir, [ENTRY_FILES.cursor], flush, { pollMs: this.knobs.cursorPollMs });
    this.timers.push(() => clearInterval(beat), unwatch);
  }

  private heartbeat(r: Running, unattended: UnattendedClock, flush: () => void): void {
    if (this.stopped) return;
    if (!this.lockHealthy()) {
      this.stopWith(lockLost());
      return;
    }
    const now = this.opts.clock.now();
    this.record = { ...this.record, heartbeat_at: now };
    try {
      this.writeRecord();
    } catch (e) {
      this.log(`heartbeat: could not write consumer.json (${(e as Error).message})`);
    }
    if (this.opts.mode === 'auto') {
      const attendance = readerAttendance(this.entry.read('reader'), {
        nowMs: now,
        staleMs: this.knobs.staleHolderSeconds * 1000,
        liveness: isSameProcessAlive,
      });
      const verdict = unattended.observe(attendance, now);
      if (verdict.stop) {
        const lease = this.keeper?.current;
        const leaseText = lease ? ` Its lease on ${lease.id} (expires ${lease.expires_at}, Hub's clock) lapses on its own` : '';
        this.stopWith(
          stop(
            EXIT.ok,
            'unattended',
            `no reader has attended this entry for ${formatDuration(verdict.idleMs)} (unattended_max_seconds ${r.settings.unattended_max_seconds}; ${verdict.why}); stopped without closing the session.${leaseText} — re-run oh-hai bridge to start a new connection`,
          ),
        );
        return;
      }
    }
    void this.serial.run(() => {
      r.seen.prune(Math.floor(now / 1000), this.replayWindow());
      r.seen.persist();
    }).catch((e: unknown) => this.log(`seen-jti: could not persist the pruned set (${(e as Error).message})`));
    flush();
  }

  /** Record the stop in consumer.json before anything else, then let go of the entry. */
  private async finish(): Promise<Stop> {
    const s = this.stopped ?? stop(EXIT.internal, 'internal_error', 'this is a bug in oh-hai: the consumer ended without a stop');
    this.abort.abort();
    for (const t of this.timers.splice(0)) t();
    await this.serial.idle().catch(() => undefined);
    await this.flushing;
    for (const c of this.closers.splice(0)) c();
    this.record = { ...this.record, state: 'stopped', exit_code: s.exit, stop_reason: s.reason, stop_message: redact(s.message, this.token ? [this.token] : []), stopped_at: this.opts.clock.now() };
    try {
      this.writeRecord();
    } catch (e) {
      this.log(`could not record the stop in consumer.json: ${(e as Error).message}`);
    }
    this.log(`consumer stopped: exit ${s.exit} (${s.reason}) — ${s.message}`);
    await this.client?.close().catch(() => undefined);
    await this.lock.release();
    return s;
  }
}

type Deliver = (raws: readonly unknown[], session: string | null) => Promise<number>;

interface Running {
  settings: ConsumerSettings;
  policy: Policy | null;
  agentId: string;
  identity: ConsumerIdentity;
  spool: Spool;
  ledger: Ledger;
  seen: SeenJti;
}
