import { rmSync, statSync } from 'node:fs';
import { CONNECTION_KNOBS, type Coded, EXIT, knobFromEnv, type KnobValues, readKnobs } from '../core/index.js';
import { acquireLock, STATE_FILES, isSameProcessAlive, openStateDir, type ConsumerSettings, type StateDir } from '../spool/index.js';
import type { Timers } from '../util/clock.js';
import { formatDuration } from '../util/duration.js';
import { Consumer } from './consumer.js';
import type { HubPortFactory } from './hub-port.js';
import { stop, type Stop } from './stops.js';

/** The consumer's intervals (the knob registry, src/core/knobs.ts); production never sets them. */
export type ConsumerKnobs = KnobValues<(typeof CONNECTION_KNOBS)[number]>;

export const readConsumerKnobs = (env: NodeJS.ProcessEnv): Coded<ConsumerKnobs> => readKnobs(env, CONNECTION_KNOBS);

export interface ConsumerOptions {
  dir: string;
  mode: 'auto' | 'direct';
  env: NodeJS.ProcessEnv;
  clock: Timers;
  pid: number;
  /** Direct mode logs here as well as to bridge.log. */
  stderr: { write(text: string): unknown } | null;
  /** Aborted from outside (SIGTERM, SIGINT): a clean stop. The reason names the signal. */
  shutdown: AbortSignal;
  version: string;
  /**
   * What to run on: the settings the launching reader handed over, or those direct mode with
   * --session resolved. Written to settings.json once the lock is ours and run on as given;
   * absent, the consumer reads settings.json (an --entry run by hand).
   */
  settings?: ConsumerSettings | null;
  random?: () => number;
  /** How to reach the Hub; default HTTP (hubClientPort). A unit test passes a fake. */
  hub?: HubPortFactory;
}

/**
 * How a consumer ended. `stopped` was recorded in consumer.json before returning;
 * `refused` never took the entry (no entry, or another consumer holds it) and wrote nothing.
 */
export type ConsumerEnd = { kind: 'stopped'; stop: Stop } | { kind: 'refused'; stop: Stop };

const LOCK_STALE_MS = 10_000;

/** Take the entry (one consumer per entry) and run a consumer on it until it stops. Never throws for an expected condition. */
export async function runConsumer(opts: ConsumerOptions): Promise<ConsumerEnd> {
  const knobs = readConsumerKnobs(opts.env);
  if (!knobs.ok) return { kind: 'refused', stop: stop(knobs.error.exit, 'bad_settings', knobs.error.message) };
  const logBound = knobFromEnv(opts.env, 'logMaxBytes');
  if (!logBound.ok) return { kind: 'refused', stop: stop(logBound.error.exit, 'bad_settings', logBound.error.message) };
  const opened = openStateDir(opts.dir, { create: false, log: { clock: opts.clock, pid: opts.pid, maxBytes: logBound.value } });
  if (!opened.ok) {
    return {
      kind: 'refused',
      stop: stop(EXIT.usage, 'bad_settings', `--entry ${opts.dir}: ${opened.reason}; the reader (oh-hai bridge) creates the entry and starts the consumer`),
    };
  }
  const stateDir = opened.value;
  let compromisedBy: string | null = null;
  const take = () =>
    acquireLock(stateDir.dir, STATE_FILES.consumerLock, {
      staleMs: LOCK_STALE_MS,
      clock: opts.clock,
      onCompromised: (err) => {
        compromisedBy = err.message;
      },
    });
  let locked = await take();
  if (!locked.ok && locked.code === 'held' && (await holderIsDead(stateDir, opts.clock))) {
    // A consumer killed with -9 leaves a fresh-looking lock for up to LOCK_STALE_MS; its record
    // (written right after it took the lock) says by pid and start time that it is gone. Not a
    // lock made since: that is a starting consumer's, whose record is not written yet.
    stateDir.log('consumer.lock is held by a consumer that no longer exists; taking it over');
    rmSync(stateDir.path(STATE_FILES.consumerLock), { recursive: true, force: true });
    locked = await take();
  }
  if (!locked.ok) return { kind: 'refused', stop: refusal(stateDir, opts, locked.reason) };
  // Here, under the lock, no other consumer can be mid-write; a reader's temp names its live pid and is kept.
  stateDir.sweepTemps(opts.clock);
  // Under the lock, settings.json is written by the one consumer that runs: the file describes
  // that connection (later runs compare their flags with it), and what it runs on is what its
  // launcher meant, whatever another run wrote while it started.
  const handed = opts.settings ? { settings: opts.settings, digest: stateDir.writeSettings(opts.settings) } : null;
  const consumer = new Consumer(stateDir, locked.lock, knobs.value, opts, () => compromisedBy, handed);
  return { kind: 'stopped', stop: await consumer.run() };
}

/**
 * How long a consumer that finds the lock newer than the record's (dead) consumer waits for the
 * lock's holder to record itself: it writes settings.json and its record right after taking the
 * lock, milliseconds even on a loaded machine. Past this it died in between, and the lock is taken
 * over rather than left to go stale (LOCK_STALE_MS).
 */
const UNRECORDED_HOLDER_MS = 3_000;

/** When the lock was made (ms), null when it is gone, 0 on a file system that keeps no birth time. */
function lockMade(stateDir: StateDir): number | null {
  try {
    return statSync(stateDir.path(STATE_FILES.consumerLock)).birthtimeMs;
  } catch {
    return null;
  }
}

/**
 * The lock's holder is gone: the record names a consumer that no longer exists, and the lock is
 * that consumer's. A lock made after the recorded consumer started is another's, which has just
 * taken the entry and has not recorded itself yet (the record still names the one before it):
 * it is given until UNRECORDED_HOLDER_MS to, and the entry is its once it has.
 */
async function holderIsDead(stateDir: StateDir, clock: Timers): Promise<boolean> {
  const deadline = clock.monotonic() + UNRECORDED_HOLDER_MS;
  let said = false;
  for (;;) {
    const rec = stateDir.read('consumer');
    if (rec.state !== 'ok' || isSameProcessAlive(rec.value) !== 'dead') return false;
    const made = lockMade(stateDir);
    // Gone (its holder let go), or made no later than the record's consumer started (0: no birth time kept): that consumer's.
    if (made === null || !(made > rec.value.started_at)) return true;
    if (clock.monotonic() >= deadline) {
      stateDir.log(`consumer.lock was taken after pid ${rec.value.pid} started, and its holder has not recorded itself within ${UNRECORDED_HOLDER_MS} ms`);
      return true;
    }
    if (!said) stateDir.log(`consumer.lock was taken after pid ${rec.value.pid} started: waiting for its holder, which is starting, to record itself`);
    said = true;
    await clock.sleep(20);
  }
}

/** Another consumer holds the entry: say who, from its record, without touching that record. */
function refusal(stateDir: StateDir, opts: ConsumerOptions, reason: string): Stop {
  const rec = stateDir.read('consumer');
  const holder =
    rec.state === 'ok'
      ? `pid ${rec.value.pid} on ${rec.value.host}, ${rec.value.state} since ${new Date(rec.value.started_at).toISOString()}, heartbeat ${formatDuration(opts.clock.now() - rec.value.heartbeat_at)} ago`
      : rec.state === 'absent'
        ? 'no consumer record yet (it is starting)'
        : `its record could not be read (${rec.reason})`;
  const message = `another consumer already drains this entry (${holder}); ${reason}. Leave it running: the reader adopts it`;
  // Auto mode: the running consumer serves the entry, nothing failed. Direct mode: a
  // supervised unit colliding with another consumer is a configuration a restart cannot fix.
  const refusal = stop(opts.mode === 'direct' ? EXIT.held : EXIT.ok, 'consumer_running', message);
  stateDir.log(`refused to start: ${refusal.message}`);
  opts.stderr?.write(`oh-hai __consumer: ${refusal.message}\n`);
  return refusal;
}
