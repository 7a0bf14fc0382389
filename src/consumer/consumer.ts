import path from 'node:path';
import { EXIT } from '../core/index.js';
import { DEFAULT_RETAIN_PRINTED, parsePolicy, policyAdmits, policyItems, resolveAgentCredential, type Policy } from '../config/index.js';
import { chooseTransport, formatAddress, replayWindowSeconds, type Capability, type ConsumerIdentity } from '../hub/contract/index.js';
import { deliveredMessageId, hop, TRACE } from '../util/trace.js';
import {
  STATE_FILES,
  hostName,
  isSameProcessAlive,
  redact,
  selfStamp,
  standDownRequestFor,
  withdrawStandDown,
  type ConsumerRecord,
  type ConsumerSettings,
  type HeldLock,
  type StandDownRequest,
  type StateDir,
} from '../spool/index.js';
import { formatDuration } from '../util/duration.js';
import { AckPump } from './ack-pump.js';
import { Acker } from './acker.js';
import { watchCursorForRounds } from './cursor-watch.js';
import { readerAttendance, UnattendedClock } from './attendance.js';
import { Serial } from './async.js';
import { escapeUnsafe } from '../util/escape.js';
import { HELD_STREAM_MS, RetryBudget, retryReason } from './backoff.js';
import { classifyFailure, type Disposition, type FailureContext } from './classify.js';
import { consumerHome } from './home.js';
import { HubClock } from './hub-clock.js';
import { hubClientPort, type HubPort } from './hub-port.js';
import { Ingest, lockLost } from './ingest.js';
import { principalRound, pollRound, streamRound, type RoundContext } from './rounds.js';
import { probePin, SessionKeeper } from './session.js';
import { standDown } from './stand-down.js';
import type { ConsumerKnobs, ConsumerOptions } from './start.js';
import { openDrainState, type DrainState } from './state.js';
import { rehearseDelivery, WARM_ROUNDS } from './rehearse.js';
import { stop, type Stop } from './stops.js';
import type { VerifyContext } from './verify.js';

/** The settings this consumer runs on, checked, and the policy they declare. */
interface Settled {
  settings: ConsumerSettings;
  policy: Policy | null;
}

/** Settings handed to this consumer (the launching reader's, or direct mode's), already in settings.json with this digest. */
export interface HandedSettings {
  settings: ConsumerSettings;
  digest: string;
}

/** Everything known once the consumer may talk to the Hub. */
interface Prepared {
  settings: ConsumerSettings;
  policy: Policy | null;
  agentId: string;
  identity: ConsumerIdentity;
  client: HubPort;
  state: DrainState;
}

const settingsFailure = (message: string): Stop => stop(EXIT.usage, 'bad_settings', message);

/** Values the file's shape allows but a consumer cannot run with. */
function settingsProblem(s: ConsumerSettings): string | null {
  if (!(s.unattended_max_seconds > 0)) {
    return `unattended_max_seconds is ${s.unattended_max_seconds}: it must be greater than 0 — 0 or less never disabled the unattended bound (a connection under a service manager runs with --mode direct, which has none)`;
  }
  if (!(s.interval_seconds > 0)) return `interval_seconds is ${s.interval_seconds}: the long-poll interval must be greater than 0`;
  return null;
}

/**
 * One consumer's life on an entry it has locked: prepare (settings, credential, state
 * files), drain until a stop, and record that stop in consumer.json before returning it.
 * The first stop wins; it aborts every wait and request in flight.
 */
export class Consumer {
  private readonly abort = new AbortController();
  /**
   * Acks and the stand-down's close. Aborted with everything else on a stop, except a
   * stand-down: its last acks and its close must still reach the Hub, within the budget
   * the requester gave.
   */
  private readonly hubSteps = new AbortController();
  private cancelBudgetTimer: (() => void) | null = null;
  /** Armed while a stream opened during retries is open: it clears `retrying` once the stream has held (answered()). */
  private cancelHeld: (() => void) | null = null;
  private stopped: Stop | null = null;
  private standingDown: StandDownRequest | null = null;
  private readonly serial = new Serial();
  /** The delivery path was rehearsed (at the first stream's open). */
  private rehearsed = false;
  private readonly startedAt: number;
  private readonly hubClock: HubClock;
  private record: ConsumerRecord;
  private token: string | null = null;
  private settings: ConsumerSettings | null = null;
  private budget: RetryBudget;
  private cap: Capability | null = null;
  private keeper: SessionKeeper | null = null;
  /** Undone when stopping: intervals and watchers first, open files once the queue is idle. */
  private readonly timers: (() => void)[] = [];
  private readonly closers: (() => void)[] = [];
  private pump: AckPump | null = null;
  private acker: Acker | null = null;
  private ingest: Ingest | null = null;
  private client: HubPort | null = null;

  constructor(
    private readonly stateDir: StateDir,
    private readonly lock: HeldLock,
    private readonly knobs: ConsumerKnobs,
    private readonly opts: ConsumerOptions,
    private readonly compromisedBy: () => string | null,
    private readonly handed: HandedSettings | null,
  ) {
    this.startedAt = opts.clock.now();
    this.hubClock = new HubClock(opts.clock);
    this.budget = this.newBudget(8);
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

  async run(): Promise<Stop> {
    const onShutdown = () => {
      const asked = this.keeper?.current ? standDownRequestFor(this.stateDir, this.record) : null;
      if (asked) this.stopWith(stop(EXIT.stoodDown, 'session_closed', 'standing the session down (oh-hai session close)'), asked);
      else this.stopWith(stop(EXIT.ok, 'signal', `stopped by ${String(this.opts.shutdown.reason ?? 'a signal')}: a clean stop, the session stays open`));
    };
    if (this.opts.shutdown.aborted) onShutdown();
    else this.opts.shutdown.addEventListener('abort', onShutdown, { once: true });
    try {
      // Settled before the record's first write, so the record names the policy from the start:
      // a run comparing its --allow-from with a starting connection reads what it will enforce.
      const settled = this.stopped ? null : this.settle();
      this.writeRecord();
      this.log(`consumer starting (pid ${this.opts.pid}, mode ${this.opts.mode})`);
      const prepared = settled && !this.stopped ? await this.prepare(settled) : null;
      if (prepared) await this.drive(prepared);
    } catch (e) {
      this.stopWith(stop(EXIT.internal, 'internal_error', `this is a bug in oh-hai: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
    } finally {
      this.opts.shutdown.removeEventListener('abort', onShutdown);
    }
    return this.finish();
  }

  /** `logOnly`: bridge.log but not stderr, for a line the caller prints there itself. */
  private log(text: string, logOnly = false): void {
    // One line, nothing a terminal acts on: the text may quote a Hub's words.
    const line = escapeUnsafe(redact(text, this.token ? [this.token] : []));
    this.stateDir.log(line);
    if (!logOnly) this.opts.stderr?.write(`oh-hai __consumer: ${line}\n`);
  }

  private stopWith(s: Stop, standDown: StandDownRequest | null = null): void {
    if (this.stopped) return;
    this.stopped = s;
    this.standingDown = standDown;
    this.abort.abort();
    if (standDown) this.cancelBudgetTimer = this.opts.clock.setTimer(standDown.budget_ms, () => this.hubSteps.abort());
    else this.hubSteps.abort();
  }

  private isStopped = (): boolean => this.stopped !== null;

  private writeRecord(): void {
    this.stateDir.write('consumer', this.record);
  }

  private lockHealthy(): boolean {
    return this.compromisedBy() === null && this.lock.check();
  }

  private newBudget(maxRetries: number): RetryBudget {
    return new RetryBudget({ maxRetries, minMs: this.knobs.backoffMinMs, maxMs: this.knobs.backoffMaxMs }, this.opts.random);
  }

  /** The settings, checked; their policy goes into the record (written by the caller). */
  private settle(): Settled | null {
    const settings = this.readSettings();
    if (!settings) return null;
    const problem = settingsProblem(settings);
    if (problem) {
      this.stopWith(settingsFailure(`${this.stateDir.path(STATE_FILES.settings)}: ${problem}`));
      return null;
    }
    this.settings = settings;
    this.budget = this.newBudget(settings.max_retries);
    const parsed = parsePolicy(settings.allow_from ?? []);
    if (!parsed.ok) {
      this.stopWith(settingsFailure(`settings.json allow_from: ${parsed.reason}`));
      return null;
    }
    const policy: Policy | null = settings.allow_from === null ? null : parsed.value;
    this.record = { ...this.record, policy: policy === null ? null : policyItems(policy) };
    return { settings, policy };
  }

  /** Credential and state files: everything else before draining that can fail locally. */
  private async prepare({ settings, policy }: Settled): Promise<Prepared | null> {
    // The entry is <state root>/oh-hai/bridge/<leg>/<key>: the identity cache lives under the root.
    const stateRoot = path.resolve(this.stateDir.dir, '..', '..', '..', '..');
    const cred = resolveAgentCredential({ env: this.opts.env, hubUrl: settings.hub, stateRoot, ...(settings.agent !== null ? { agent: settings.agent } : {}) });
    if (!cred.ok) {
      this.stopWith(
        stop(cred.error.exit, 'no_credential', `${cred.error.message} (the consumer re-resolves its own credential from config and its environment)`),
      );
      return null;
    }
    this.token = cred.value.token;
    const identity: ConsumerIdentity = { home: consumerHome(this.stateDir.dir), host: hostName(), pid: this.opts.pid };
    const client = (this.opts.hub ?? hubClientPort)({
      baseUrl: settings.hub,
      token: cred.value.token,
      consumer: identity,
      userAgent: `oh-hai/${this.opts.version} consumer`,
    });
    this.client = client;
    const agentId = cred.value.agentId ?? (await this.whoami(client));
    if (agentId === null) return null;
    if (agentId !== settings.agent_id) {
      this.stopWith(
        stop(
          EXIT.auth,
          'credential_mismatch',
          `the credential in this environment acts as agent ${agentId}, but this state entry belongs to agent ${settings.agent_id}; run the consumer with that agent's credential (or --agent ${settings.agent_id})`,
        ),
      );
      return null;
    }
    const state = openDrainState(this.stateDir, this.opts.clock, (t) => this.log(t), {
      leg: settings.leg,
      retain: { ...DEFAULT_RETAIN_PRINTED, ...settings.retain_printed },
    });
    if (!state.ok) {
      this.stopWith(state.stop);
      return null;
    }
    this.closers.push(state.value.close);
    return { settings, policy, agentId, identity, client, state: state.value };
  }

  /** What it was handed, else settings.json (an --entry run by hand): never the file when handed, which another run may have rewritten since. */
  private readSettings(): ConsumerSettings | null {
    if (this.handed) {
      this.record = { ...this.record, settings_digest: this.handed.digest };
      return this.handed.settings;
    }
    const { read, digest } = this.stateDir.readSettings();
    if (read.state !== 'ok') {
      const why = read.state === 'absent' ? 'it does not exist' : read.reason;
      this.stopWith(settingsFailure(`cannot read ${this.stateDir.path(STATE_FILES.settings)}: ${why}; the reader writes it before starting a consumer`));
      return null;
    }
    this.record = { ...this.record, settings_digest: digest ?? '' };
    return read.value;
  }

  private async whoami(client: HubPort): Promise<string | null> {
    for (;;) {
      const r = await client.whoami(this.abort.signal);
      if (r.ok) {
        if (r.value.kind === 'agent') return r.value.agent.id;
        this.stopWith(stop(EXIT.auth, 'forbidden', 'the credential in this environment is a human token; the consumer needs an agent token'));
        return null;
      }
      if (!(await this.handle(classifyFailure(r.failure, { operation: 'whoami', sessionId: null, pinned: null })))) return null;
    }
  }

  /**
   * Apply a disposition. True when the caller should go on (a fault waited out, a lapsed
   * session replaced), false when the consumer is stopping.
   */
  private async handle(d: Disposition): Promise<boolean> {
    if (this.stopped) return false;
    switch (d.kind) {
      case 'stop':
        this.stopWith(d.stop);
        return false;
      case 'reregister': {
        const keeper = this.keeper;
        if (!keeper) {
          this.stopWith(stop(EXIT.internal, 'internal_error', `this is a bug in oh-hai: asked to replace a session on the principal leg (${d.message})`));
          return false;
        }
        this.log(`${d.message}: registering a new session under the same name`);
        const replaced = await this.serial.run(() => keeper.replace(d.reason));
        return replaced.ok ? true : this.handle(replaced.disposition);
      }
      case 'fault': {
        const decision = this.budget.fault(d.retryAfterSeconds);
        if (decision.kind === 'exhausted') {
          this.stopWith(
            stop(
              EXIT.unreachable,
              'unreachable',
              `the Hub at ${this.settings?.hub ?? '(unknown)'} is unreachable: ${decision.attempts + 1} attempts failed in a row (max_retries ${decision.attempts}); last: ${d.message}. Nothing is lost: unacknowledged mail stays at the Hub`,
            ),
          );
          return false;
        }
        this.log(`${d.message}; retry ${decision.attempt} of ${this.settings?.max_retries ?? '?'} in ${Math.round(decision.delayMs)} ms`);
        const now = this.opts.clock.now();
        this.record = {
          ...this.record,
          retrying: {
            attempt: decision.attempt,
            of: this.settings?.max_retries ?? 0,
            at: now + decision.delayMs,
            since: this.record.retrying?.since ?? now,
            reason: retryReason(escapeUnsafe(redact(d.message, this.token ? [this.token] : []))),
          },
        };
        this.writeRecord();
        await this.opts.clock.sleep(decision.delayMs, this.abort.signal);
        return !this.stopped;
      }
    }
  }

  /**
   * An unpinned --session / MA2H_SESSION_ID value may be an opaque Hub session id: asked once
   * per connection start, before anything registers under it. A session of this agent is
   * then pinned for the whole run, exactly as a `sess_…` value; anything else stays a name.
   */
  private async settlePin(p: Prepared): Promise<Prepared | null> {
    const candidate = p.settings.leg === 'session' && p.settings.pinned === null ? (p.settings.pin_candidate ?? null) : null;
    if (candidate === null) return p;
    while (!this.stopped) {
      // The capability first: a Hub this client refuses is asked nothing about sessions.
      if ((this.cap ?? (await this.readCapability(p))) === null) continue;
      const probe = await probePin(p.client, candidate, p.agentId, this.abort.signal);
      if (probe.kind === 'undecided') {
        await this.handle(probe.disposition);
        continue;
      }
      if (probe.kind === 'name') {
        this.log(`${candidate} is not a session of this agent (${probe.why}): it is the session name`);
        return p;
      }
      this.log(`${candidate} is a session of this agent at the Hub: pinned to it`);
      const settings: ConsumerSettings = { ...p.settings, pinned: candidate, name: null };
      this.settings = settings;
      return { ...p, settings };
    }
    return null;
  }

  private async drive(prepared: Prepared): Promise<void> {
    const p = await this.settlePin(prepared);
    if (p === null) return;
    const { settings, state, client } = p;
    const keeper =
      settings.leg === 'session'
        ? new SessionKeeper({
            client,
            stateDir: this.stateDir,
            spool: state.spool,
            clock: this.opts.clock,
            log: (t) => this.log(t),
            pinned: settings.pinned,
            name: settings.name,
            clientKey: path.basename(this.stateDir.dir),
            consumer: p.identity,
            signal: this.abort.signal,
          })
        : null;
    this.keeper = keeper;
    const ingest = new Ingest({ spool: state.spool, ledger: state.ledger, seen: state.seen, log: (t) => this.log(t), lockHealthy: () => this.lockHealthy() });
    this.ingest = ingest;
    const acker = new Acker({
      client,
      ledger: state.ledger,
      stateDir: this.stateDir,
      spool: state.spool,
      currentSession: () => keeper?.current?.id ?? null,
      pinned: settings.pinned,
      renewed: (lease) => keeper?.renewed(lease),
      log: (t) => this.log(t),
      signal: this.hubSteps.signal,
    });
    this.acker = acker;
    const pump = new AckPump({
      acker,
      commit: () => ingest.commit(),
      compact: () => {
        for (const line of state.compact(this.opts.clock.now(), this.replayWindow())) this.log(line);
      },
      lockHealthy: () => this.lockHealthy(),
      stopped: this.isStopped,
      stopWith: (s) => this.stopWith(s),
      log: (t) => this.log(t),
    });
    this.pump = pump;
    this.startTimers(p, pump);

    const deliver = (raws: readonly unknown[], session: string | null): Promise<number> =>
      this.serial.run(() => {
        if (this.stopped || raws.length === 0) return 0;
        if (TRACE) for (const raw of raws) hop('consumer.received', deliveredMessageId(raw));
        const address = session === null ? formatAddress(p.agentId) : (keeper?.current?.address ?? formatAddress(p.agentId, session));
        const result = ingest.run(raws, { session, address }, this.verifyContext(p, session));
        if (!result.ok) {
          this.stopWith(result.stop);
          return 0;
        }
        if (TRACE) for (const raw of raws) hop('consumer.spooled', deliveredMessageId(raw));
        pump.request();
        if (TRACE) for (const raw of raws) hop('consumer.ledgered', deliveredMessageId(raw));
        return result.spooled;
      });

    while (!this.stopped) {
      const capability = this.cap ?? (await this.readCapability(p));
      if (capability === null) continue;
      if (keeper && keeper.current === null) {
        const established = await this.serial.run(() => keeper.establish());
        if (established.ok) pump.request();
        else await this.handle(established.disposition);
        continue;
      }
      const ctx: RoundContext = {
        client,
        capability,
        identity: p.identity,
        settings,
        clock: this.opts.clock,
        hubClock: this.hubClock,
        signal: this.abort.signal,
        stopped: this.isStopped,
        opened: () => {
          this.streamOpened();
          this.markRunning();
          // Once per process: the first delivery then finds its checks compiled (src/consumer/rehearse.ts).
          if (this.rehearsed) return;
          this.rehearsed = true;
          const rehearsal = this.verifyContext(p, keeper?.current?.id ?? null);
          rehearseDelivery(rehearsal);
          // The rounds that leave the interpreter, a turn later: a page that came with `open` goes first.
          setImmediate(() => rehearseDelivery(rehearsal, WARM_ROUNDS));
        },
        connected: () => this.connected(),
        failureContext: (operation, sessionId): FailureContext => ({ operation, sessionId, pinned: settings.pinned }),
        deliver,
      };
      const sid = keeper?.current?.id ?? null;
      const outcome =
        keeper === null || sid === null
          ? await principalRound(ctx, this.record.state === 'running' && this.record.retrying === undefined)
          : this.record.transport === 'sse'
            ? await streamRound(ctx, keeper, sid)
            : await pollRound(ctx, keeper, sid);
      // The stream is over: one that did not hold as long as HELD_STREAM_MS never said the Hub was back.
      this.unarmHeld();
      if (outcome !== null) await this.handle(outcome);
    }
  }

  /** The capability (kept for the run), or null after a stop or a fault waited out (the caller loops). */
  private async readCapability(p: Prepared): Promise<Capability | null> {
    const r = await p.client.capability(this.abort.signal);
    if (!r.ok) {
      if (r.failure.kind === 'protocol') {
        this.stopWith(
          stop(
            EXIT.usage,
            'hub_unsupported',
            `the Hub at ${p.settings.hub} cannot be used: ${r.failure.message}. A retry will not change that; point oh-hai at an MA2H 0.5+ Hub (--hub, MA2H_HUB_URL or [hub] url)`,
          ),
        );
      } else await this.handle(classifyFailure(r.failure, { operation: 'read capability', sessionId: null, pinned: null }));
      return null;
    }
    this.cap = r.value;
    this.hubClock.note(r.value.server_time, 'server_time');
    const transport = p.settings.leg === 'principal' ? 'poll' : chooseTransport(r.value, p.settings.transport);
    this.record = { ...this.record, transport };
    this.writeRecord();
    this.log(`Hub ${p.settings.hub} speaks MA2H ${r.value.version}; transport ${transport}${p.settings.leg === 'principal' ? ' (principal drain)' : ''}`);
    return r.value;
  }

  private verifyContext(p: Prepared, session: string | null): VerifyContext {
    return {
      agentId: p.agentId,
      leg: session === null ? { leg: 'principal' } : { leg: 'session', sessionId: session },
      replayWindowSeconds: this.replayWindow(),
      signatureAlgs: this.cap?.signature_algs ?? ['hmac-sha256'],
      nowMs: this.opts.clock.now(),
      clock: this.hubClock.reading,
      seen: (jti) => p.state.seen.has(jti),
      admit: (e) => policyAdmits(p.policy, e, { agentId: p.agentId }),
    };
  }

  private replayWindow(): number {
    return this.knobs.replayWindowSeconds ?? (this.cap ? replayWindowSeconds(this.cap) : 300);
  }

  private connected(): void {
    this.budget.succeeded();
    this.unarmHeld();
    this.answered();
    this.markRunning();
  }

  /**
   * A stream opened. While the connection retries, the open alone does not say the Hub is back:
   * a Hub (or a balancer) that answers `open` and drops the socket would otherwise flip the
   * record clear and retrying again on every attempt, and a waiting reader would print a pair of
   * lines per flap. The stream says it once it has held HELD_STREAM_MS — or sooner, on progress
   * (connected()) — so "back" comes seconds after a real recovery, not a whole hold later.
   */
  private streamOpened(): void {
    this.unarmHeld();
    if (this.record.retrying === undefined) return;
    this.cancelHeld = this.opts.clock.setTimer(HELD_STREAM_MS, () => {
      this.cancelHeld = null;
      if (!this.stopped) this.answered();
    });
  }

  private unarmHeld(): void {
    this.cancelHeld?.();
    this.cancelHeld = null;
  }

  /**
   * The Hub has served: the record stops saying the connection retries, so a waiting reader says
   * it is back. A held stream is an answer but not progress — the budget refills only on
   * progress (backoff.ts), so a Hub that holds streams and drops them still reaches exit 13.
   */
  private answered(): void {
    if (this.record.retrying === undefined) return;
    const record = { ...this.record };
    delete record.retrying;
    this.record = record;
    this.writeRecord();
  }

  private markRunning(): void {
    if (this.record.state !== 'running') {
      this.record = { ...this.record, state: 'running' };
      this.writeRecord();
    }
  }

  private startTimers(p: Prepared, pump: AckPump): void {
    const unattended = new UnattendedClock(this.startedAt, p.settings.unattended_max_seconds * 1000);
    let cancelBeat = (): void => undefined;
    const beat = (): void => {
      cancelBeat = this.opts.clock.setTimer(this.knobs.heartbeatMs, () => {
        this.heartbeat(p, unattended, pump);
        if (!this.stopped) beat();
      });
    };
    beat();
    const unwatch = watchCursorForRounds(this.stateDir.dir, pump, { pollMs: this.knobs.cursorPollMs, clock: this.opts.clock });
    this.timers.push(() => cancelBeat(), unwatch);
  }

  private heartbeat(p: Prepared, unattended: UnattendedClock, pump: AckPump): void {
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
      const attendance = readerAttendance(this.stateDir.read('reader'), {
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
            `no reader has attended this entry for ${formatDuration(verdict.idleMs)} (unattended_max_seconds ${p.settings.unattended_max_seconds}; ${verdict.why}); stopped without closing the session.${leaseText} — re-run oh-hai bridge to start a new connection`,
          ),
        );
        return;
      }
    }
    // Forget jtis the freshness check would refuse anyway; the next ack round persists the set.
    p.state.seen.prune(Math.floor(now / 1000), this.replayWindow());
    pump.request();
  }

  /** Drained and ledgered: now close the session at the Hub and forget it (stand-down.ts). */
  private async performStandDown(asked: Stop): Promise<Stop> {
    const session = this.keeper?.current;
    try {
      withdrawStandDown(this.stateDir);
      if (!session || !this.client || !this.acker)
        return stop(EXIT.ok, 'signal', `asked to stand down before it held a session: a clean stop (${asked.message})`);
      return await standDown({
        client: this.client,
        acker: this.acker,
        stateDir: this.stateDir,
        session,
        pinned: this.settings?.pinned ?? null,
        nowMs: () => this.opts.clock.now(),
        signal: this.hubSteps.signal,
        log: (t) => this.log(t),
      });
    } catch (e) {
      return stop(
        EXIT.internal,
        'internal_error',
        `this is a bug in oh-hai: standing ${session?.id ?? 'the session'} down failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
      );
    }
  }

  /** Record the stop in consumer.json before anything else it says, then let go of the entry. */
  private async finish(): Promise<Stop> {
    let s = this.stopped ?? stop(EXIT.internal, 'internal_error', 'this is a bug in oh-hai: the consumer ended without a stop');
    this.abort.abort();
    this.unarmHeld();
    for (const t of this.timers.splice(0)) t();
    await this.serial.idle().catch(() => undefined);
    await this.pump?.settled();
    if (s.reason !== 'spool_write_failed' && s.reason !== 'lock_compromised') {
      // What is spooled becomes ackable by the next consumer without waiting for a redelivery.
      try {
        this.ingest?.commit();
      } catch (e) {
        this.log(`could not ledger the last records: ${(e as Error).message}; the Hub redelivers them`);
      }
    }
    if (this.standingDown) s = await this.performStandDown(s);
    this.cancelBudgetTimer?.();
    this.hubSteps.abort();
    for (const c of this.closers.splice(0)) c();
    this.record = {
      ...this.record,
      state: 'stopped',
      exit_code: s.exit,
      stop_reason: s.reason,
      stop_message: redact(s.message, this.token ? [this.token] : []),
      stopped_at: this.opts.clock.now(),
    };
    try {
      this.writeRecord();
    } catch (e) {
      this.log(`could not record the stop in consumer.json: ${(e as Error).message}`);
    }
    // The stop is the command's outcome, which `oh-hai __consumer` prints on stderr as its one stop
    // line: said here too, a unit's journal would show every stop twice.
    this.log(`consumer stopped: exit ${s.exit} (${s.reason}) — ${s.message}`, true);
    await this.client?.close().catch(() => undefined);
    await this.lock.release();
    // As recorded, the token redacted: that line and consumer.json say the same.
    return { ...s, message: this.record.stop_message ?? s.message };
  }
}
