import type { AckResult, Session } from '../../hub/contract/index.js';
import type { HubFailure, HubResult } from '../../hub/client/index.js';
import { type Coded, EXIT, knobFromEnv } from '../../core/index.js';
import { STATE_FILES, hubOrigin, processCommand, processState, stopAndWait, type SessionRecord } from '../../spool/index.js';
import {
  ADOPTION_RECORD,
  claimLegacyHome,
  completeAdoptionMarker,
  convertLegacySpool,
  stateDirSpoolEmpty,
  LEGACY_FILES,
  markerNote,
  readAdoptionMarker,
  readLegacyHome,
  writeAdoptedCursor,
  writeAdoptedSpool,
  writeAdoptionRecord,
  type AdoptionMarker,
  type ConvertedSpool,
  type LegacyHome,
} from '../../spool/legacy.js';
import { formatDuration } from '../../util/duration.js';
import type { LegacyHookRequest } from './legacy-hook.js';

/**
 * Adopting a live 0.9 per-directory home into this agent session's state dir, once
 * (product doc, "Two processes, one state dir"; the layout, "live" and the order of the
 * steps are in docs/legacy-0.9.md). Every step is durable before the next begins, and the
 * state dir gets its session.json last: until then the next run resumes from the marker.
 */

/** The durable steps, in order; a test ends the process after any of them. */
export const ADOPTION_STEPS = ['claimed', 'stopped', 'spool', 'cursor', 'record', 'marked', 'session'] as const;
export type AdoptionStep = (typeof ADOPTION_STEPS)[number];

/** The two Hub calls adoption makes. */
export interface LegacyHub {
  getSession(id: string): Promise<HubResult<Session>>;
  /** Presents the session with an empty ack: renews it and reports the lease. */
  renew(id: string): Promise<HubResult<AckResult>>;
  close(): Promise<void>;
}

export interface AdoptRequest extends LegacyHookRequest {
  legacyDir: string;
  /** Runs after each durable step (a crash test ends the process there). */
  afterStep?: (step: AdoptionStep) => void;
  /** Default: the Hub client, loaded only now. */
  hub?: LegacyHub;
}

const note = (lines: string[]): Coded<string[]> => ({ ok: true, value: lines });

async function httpHub(hubUrl: string, token: string): Promise<LegacyHub> {
  const { HubClient } = await import('../../hub/client/index.js');
  const client = new HubClient({ baseUrl: hubUrl, token });
  return {
    getSession: (id) => client.getSession(id),
    renew: (id) => client.ack({ session: id }),
    close: () => client.close(),
  };
}

type Standing = { kind: 'found'; session: Session } | { kind: 'not_found' };

function hubError(f: HubFailure, hubUrl: string, doing: string): Coded<never> {
  const said = f.kind === 'http' ? `${f.status} ${f.code}: ${f.message}` : f.message;
  if (f.kind === 'http' && (f.status === 401 || f.code === 'messaging_disabled' || f.code === 'forbidden')) {
    return {
      ok: false,
      error: {
        code: f.code,
        exit: EXIT.auth,
        message: `the Hub at ${hubUrl} refused the credential while ${doing} (${said}); a human must fix the credential`,
      },
    };
  }
  return {
    ok: false,
    error: {
      code: 'hub_unreachable',
      exit: EXIT.unreachable,
      message: `could not ask the Hub at ${hubUrl} while ${doing} (${said}); nothing was adopted yet — re-run with your own backoff`,
    },
  };
}

async function standing(hub: LegacyHub, id: string, hubUrl: string): Promise<Coded<Standing>> {
  const got = await hub.getSession(id);
  if (got.ok) return { ok: true, value: { kind: 'found', session: got.value } };
  if (got.failure.kind === 'http' && got.failure.status === 404) return { ok: true, value: { kind: 'not_found' } };
  return hubError(got.failure, hubUrl, `reading the 0.9 home's session ${id}`);
}

/**
 * consumer.pid holds a bare pid, so a recycled pid is told apart by what runs under it: a
 * live 0.9 connection is an oh-hai process (and never this one).
 */
function connectionAlive(pid: number | null, self: number): boolean {
  if (pid === null || pid === self || processState(pid) !== 'running') return false;
  return /oh-hai/.test(processCommand(pid) ?? '');
}

function stateOf(s: Standing): string {
  return s.kind === 'found' ? s.session.state : 'unknown to the Hub';
}

export async function adoptLegacyHome(req: AdoptRequest): Promise<Coded<string[]>> {
  // How long a clean stop may take, as for `oh-hai session close`; refused before anything moves.
  const stopWait = knobFromEnv(req.io.env, 'stopWaitMs');
  if (!stopWait.ok) return stopWait;
  const L = req.legacyDir;
  const E = req.stateDir.dir;
  const read = readLegacyHome(L);
  if (!read.ok) return note([`found a 0.9 bridge home at ${L} but cannot read it (${read.reason}); not adopted, left as it was`]);
  const legacy = read.value;
  const s = legacy.session;

  const marker = readAdoptionMarker(L);
  if (marker.state === 'unreadable')
    return note([`found a 0.9 bridge home at ${L} whose adoption marker cannot be read (${marker.reason}); not adopted, left as it was`]);
  // Adopted by another agent session already: once means once, and saying so on every new entry is noise.
  if (marker.state === 'ok' && marker.value.into !== E) return note([]);
  const prior = marker.state === 'ok' ? marker.value : null;

  const theirs = hubOrigin(s.hub);
  const ours = hubOrigin(req.hubUrl);
  if (!theirs.ok || !ours.ok || theirs.value !== ours.value || s.agent_id !== req.agentId) {
    return note([
      `found a 0.9 bridge home at ${L} for agent ${s.agent_id} at ${s.hub}, not this agent session's (agent ${req.agentId} at ${req.hubUrl}); not adopted, left as it was`,
    ]);
  }
  if (req.pinned !== null && req.pinned !== s.id) {
    return note([
      `found a 0.9 bridge home at ${L} holding session ${s.id}, but this run pins ${req.pinned}; not adopted, left as it was (a run that pins no other session adopts it)`,
    ]);
  }
  const hub = req.hub ?? (await httpHub(req.hubUrl, req.token));
  try {
    const found = await standing(hub, s.id, req.hubUrl);
    if (!found.ok) return found;
    const alive = connectionAlive(legacy.consumerPid, req.io.pid);
    const active = found.value.kind === 'found' && found.value.session.state === 'active';
    if (prior === null && !active && !alive) {
      return note([
        `found a 0.9 bridge home at ${L}, but it is not live: its session ${s.id} is ${stateOf(found.value)} and no 0.9 connection is running; ` +
          'not adopted, and left exactly as it was (its records stay readable there; remove it when you no longer need it)',
      ]);
    }
    if (prior === null && !stateDirSpoolEmpty(E)) {
      return note([
        `found a live 0.9 bridge home at ${L} (session ${s.id}), but this agent session's spool ${req.stateDir.path(STATE_FILES.spool)} already holds records, and adoption never merges two spools; not adopted, left as it was. ` +
          'To adopt it, run oh-hai bridge in that directory under an agent session of its own (--session <name>)',
      ]);
    }
    return await adopt(req, legacy, prior, found.value, alive, hub, stopWait.value);
  } finally {
    await hub.close();
  }
}

/** `prior` is this entry's own marker when a crash interrupted an earlier run: the claim is already made. */
async function adopt(
  req: AdoptRequest,
  legacy: LegacyHome,
  prior: AdoptionMarker | null,
  found: Standing,
  alive: boolean,
  hub: LegacyHub,
  waitMs: number,
): Promise<Coded<string[]>> {
  const L = legacy.dir;
  const E = req.stateDir.dir;
  const s = legacy.session;
  const step = (name: AdoptionStep) => req.afterStep?.(name);
  const marker: AdoptionMarker = prior ?? {
    into: E,
    session: s.id,
    state: 'started',
    started_at: new Date(req.io.clock.now()).toISOString(),
    done_at: null,
    note: markerNote(E),
  };

  if (prior === null) {
    let claimed: 'claimed' | 'taken';
    try {
      claimed = claimLegacyHome(L, marker);
    } catch (e) {
      return note([
        `found a live 0.9 bridge home at ${L} but cannot write its adoption marker there (${(e as Error).message}); without it adoption could happen twice, so it was not adopted and is left as it was`,
      ]);
    }
    // Another agent session claimed it between our read and our claim.
    if (claimed === 'taken') return note([]);
  }
  step('claimed');

  let stopped: number | null = null;
  if (alive && legacy.consumerPid !== null) {
    // SIGTERM — a clean stop that leaves its session open — then wait for it to be gone.
    const pid = legacy.consumerPid;
    const outcome = await stopAndWait(pid, { gone: () => processState(pid) !== 'running', budgetMs: waitMs, clock: req.io.clock });
    if (outcome.kind === 'not_signalled' && outcome.code !== 'EPERM') throw new Error(`could not signal the 0.9 connection pid ${pid}: ${outcome.message}`);
    if (outcome.kind !== 'gone') {
      const why = outcome.kind === 'timeout' ? `did not stop within ${formatDuration(waitMs)} of SIGTERM` : 'runs as another user, so this run cannot stop it';
      return {
        ok: false,
        error: {
          code: 'legacy_connection_running',
          exit: EXIT.held,
          message:
            `the 0.9 bridge connection (pid ${legacy.consumerPid}) that drains ${L} ${why}; adopting its session while it still drains would give the session two consumers. ` +
            'Nothing was moved yet: once it has stopped, run oh-hai bridge again here and adoption finishes',
        },
      };
    }
    stopped = legacy.consumerPid;
  }
  step('stopped');

  const converted = convertLegacySpool(L, s.id);
  writeAdoptedSpool(E, converted);
  step('spool');
  writeAdoptedCursor(E, converted);
  step('cursor');
  writeAdoptionRecord(E, { from: L, session: s.id, home: s.home, records: converted.records, adopted_at: req.io.clock.now() });
  step('record');
  completeAdoptionMarker(L, { ...marker, state: 'done', done_at: new Date(req.io.clock.now()).toISOString() });
  step('marked');

  const record = await sessionRecord(req, legacy, found, converted, hub);
  req.stateDir.write('session', record);
  step('session');

  const said = adoptedLine(L, record, converted, stopped, found);
  req.stateDir.log(`adopted the 0.9 home ${L}: session ${s.id}, ${converted.records} records, cursor at seq ${converted.cursor.seq} (${ADOPTION_RECORD})`);
  return note([said, ...converted.notes.map((n) => `0.9 home ${L}: ${n}`)]);
}

/**
 * The adopted session as this entry's current one. An active session is presented once
 * (an empty ack) so the renewal recorded is one we saw; a session the Hub no longer holds
 * active is recorded all the same, so the connection replaces it as any lapsed session —
 * with an address_changed record in the spool.
 */
async function sessionRecord(req: AdoptRequest, legacy: LegacyHome, found: Standing, converted: ConvertedSpool, hub: LegacyHub): Promise<SessionRecord> {
  const s = legacy.session;
  const base = { id: s.id, address: s.address, name: s.name, pinned: req.pinned !== null, history: converted.history };
  if (found.kind === 'found' && found.session.state === 'active') {
    const renewed = await hub.renew(s.id);
    if (renewed.ok && renewed.value.session !== null) {
      const lease = renewed.value.session;
      return { ...base, name: found.session.name, lease_seconds: lease.lease_seconds, expires_at: lease.expires_at, renewed_at: req.io.clock.now() };
    }
  }
  if (found.kind === 'found') {
    return {
      ...base,
      name: found.session.name,
      lease_seconds: found.session.lease_seconds,
      expires_at: found.session.expires_at,
      renewed_at: req.io.clock.now(),
    };
  }
  return { ...base, lease_seconds: 0, expires_at: 'unknown (the Hub has no such session)', renewed_at: req.io.clock.now() };
}

function adoptedLine(L: string, record: SessionRecord, converted: ConvertedSpool, stopped: number | null, found: Standing): string {
  const parts = [
    `adopted the 0.9 bridge home ${L} into this agent session's state entry: session ${record.id} (${record.address}) kept, ` +
      `${converted.records} record${converted.records === 1 ? '' : 's'} carried over (${converted.unread} unread) with the cursor`,
  ];
  if (stopped !== null) parts.push(`its 0.9 connection (pid ${stopped}) was stopped first`);
  if (found.kind !== 'found' || found.session.state !== 'active') {
    parts.push(`the session itself is ${stateOf(found)}, so the connection registers a new one and prints the address change`);
  }
  parts.push(`${L}/${LEGACY_FILES.marker} says where it went; nothing there was deleted — remove it when you no longer need it`);
  return parts.join('; ');
}
