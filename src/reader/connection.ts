import { describePolicy, parsePolicy, policyEquals, type Policy } from '../config/index.js';
import { EXIT } from '../core/index.js';
import type { ConsumerRecord, ConsumerSettings, RecordRead, Liveness, ReportedStop } from '../spool/index.js';

/**
 * One consumer per entry: adopt the live one, report the one that stopped, or start one.
 * Pure: the caller reads the records and liveness and carries the plan out.
 */

/** The flags that shape a connection; naming one asserts what the running connection must use. */
export interface NamedFlags {
  allowFrom: boolean;
  transport: boolean;
  interval: boolean;
  maxRetries: boolean;
}

export type ConnectionPlan =
  | { kind: 'adopt'; record: ConsumerRecord; note: string }
  | { kind: 'report'; record: ConsumerRecord }
  | { kind: 'start'; note: string | null }
  | { kind: 'conflict'; message: string };

export interface ConnectionFacts {
  consumer: RecordRead<ConsumerRecord>;
  alive: Liveness;
  reported: ReportedStop | null;
  /** settings.json when its digest matches the running consumer's, else null (not known). */
  running: ConsumerSettings | null;
  wanted: ConsumerSettings;
  named: NamedFlags;
  /** How this leg's user stops the running connection (pid given); the session leg's when absent. */
  stopRunning?: (pid: number) => string;
}

export const isReported = (r: ConsumerRecord, reported: ReportedStop | null): boolean =>
  reported !== null && reported.pid === r.pid && reported.start_time === r.start_time && reported.stopped_at === r.stopped_at;

/** A recorded policy as a Policy; undefined when it does not parse (never equal to anything). */
function asPolicy(items: string[] | null): Policy | null | undefined {
  if (items === null) return null;
  const parsed = parsePolicy(items);
  return parsed.ok ? parsed.value : undefined;
}

const policyText = (items: string[] | null): string => {
  if (items === null) return 'none declared';
  const p = asPolicy(items);
  return p === undefined ? items.join(', ') : describePolicy(p);
};

function samePolicy(a: string[] | null, b: string[] | null): boolean {
  const pa = asPolicy(a);
  const pb = asPolicy(b);
  return pa !== undefined && pb !== undefined && policyEquals(pa, pb);
}

const sessionStop = (): string => 'run `oh-hai session close --keep-connection`';
const fix = (stop: string): string =>
  `A named flag cannot change a running connection: ${stop}, then re-run this command (or drop the flag to adopt what is running).`;

function disagreements(f: ConnectionFacts, r: ConsumerRecord): string[] {
  const out: string[] = [];
  if (f.named.allowFrom && !samePolicy(f.wanted.allow_from, r.policy)) {
    out.push(`--allow-from asks for ${policyText(f.wanted.allow_from)}, but it enforces ${policyText(r.policy)}`);
  }
  const s = f.running;
  if (f.named.transport && s && s.transport !== f.wanted.transport) {
    out.push(`--transport ${f.wanted.transport}, but it runs with transport ${s.transport}`);
  }
  if (f.named.interval && s && s.interval_seconds !== f.wanted.interval_seconds) {
    out.push(`--interval ${f.wanted.interval_seconds}, but it runs with interval ${s.interval_seconds}`);
  }
  if (f.named.maxRetries && s && s.max_retries !== f.wanted.max_retries) {
    out.push(`--max-retries ${f.wanted.max_retries}, but it runs with max retries ${s.max_retries}`);
  }
  return out;
}

/**
 * Stops whose cause may be gone by this run, and only the Hub can say: relaying them would stop
 * the run without asking it. A new connection asks, and its own stop is relayed if the cause holds.
 */
const ASK_THE_HUB_AGAIN = new Map<number, string>([
  // 13 says "try again later", and this run is the later (issue 17, point 7).
  [EXIT.unreachable, 'gave up on an unreachable Hub (exit 13); trying the Hub again'],
  // A human may have lifted the kill-switch's stop since: then the connection registers a new session.
  [EXIT.operatorClosed, 'stopped on the operator kill-switch (exit 14); asking the Hub whether a human lifted it'],
]);

/**
 * The exit code the next run relays, once, from this recorded stop instead of starting a
 * connection; null when it starts one. `oh-hai session close` says what the next run does by it.
 */
export function relayedStop(r: ConsumerRecord, reported: ReportedStop | null): number | null {
  if (r.state !== 'stopped' || r.exit_code === null || r.exit_code === 0 || ASK_THE_HUB_AGAIN.has(r.exit_code) || isReported(r, reported)) return null;
  return r.exit_code;
}

export function planConnection(f: ConnectionFacts): ConnectionPlan {
  const c = f.consumer;
  if (c.state === 'absent') return { kind: 'start', note: null };
  if (c.state === 'unreadable') {
    // Its lock, not this record, decides: a second consumer on a held entry exits quietly.
    return {
      kind: 'start',
      note: `could not read the background connection's record (${c.reason}); starting one — if one is running, it keeps the entry and the new one stops`,
    };
  }
  const r = c.value;
  if (r.state === 'stopped') {
    const again = r.exit_code !== null ? ASK_THE_HUB_AGAIN.get(r.exit_code) : undefined;
    if (again !== undefined && !isReported(r, f.reported)) return { kind: 'start', note: `the previous background connection (pid ${r.pid}) ${again}` };
    if (relayedStop(r, f.reported) !== null) return { kind: 'report', record: r };
    return { kind: 'start', note: `the previous background connection (pid ${r.pid}) stopped (${r.stop_reason ?? 'no reason recorded'}); starting a new one` };
  }
  if (f.alive === 'dead') {
    return { kind: 'start', note: `the previous background connection (pid ${r.pid}) died without recording a stop; starting a new one` };
  }
  const wrong = disagreements(f, r);
  if (wrong.length > 0) {
    return {
      kind: 'conflict',
      message: `the running background connection (pid ${r.pid} on ${r.host}) disagrees with what you named: ${wrong.join('; ')}. ${fix((f.stopRunning ?? sessionStop)(r.pid))}`,
    };
  }
  const anyNamed = Object.values(f.named).some(Boolean);
  const unverified = anyNamed && f.running === null && (f.named.transport || f.named.interval || f.named.maxRetries);
  const runs = `policy ${policyText(r.policy)}${f.running ? `, transport ${f.running.transport}` : ''}`;
  const note = !anyNamed
    ? `adopting the running background connection (pid ${r.pid} on ${r.host}; ${runs}) — a flagless run uses what is running`
    : unverified
      ? `adopting the running background connection (pid ${r.pid} on ${r.host}); its settings file does not match it, so only --allow-from could be checked against it`
      : `adopting the running background connection (pid ${r.pid} on ${r.host}), which already runs with what you named`;
  return { kind: 'adopt', record: r, note };
}
