import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { Acker } from '../../../src/consumer/acker.js';
import type { AckRequest, AckResult, SessionLease } from '../../../src/hub/contract/index.js';
import type { HubClient, HubFailure, HubResult } from '../../../src/hub/client/index.js';
import { Ledger, openStateDir, type Spool, type StateDir } from '../../../src/spool/index.js';
import { fakeClock } from '../../../src/util/clock.js';

/**
 * A state entry with a real spool and ledger, and a Hub that only answers acks: what the
 * acker sends is decided by the ledger and the cursor on disk, and all it needs from the Hub
 * is an answer to record. The ack bodies are kept in order.
 */
export interface AckWorld {
  dir: string;
  stateDir: StateDir;
  spool: Spool;
  ledger: Ledger;
  /** Every ack request, in order. */
  acks: AckRequest[];
  logs: string[];
  renewals: SessionLease[];
  /** What the next acks answer: a failure, or ids the Hub does not know. Consumed in order; then plain success. */
  answers: ({ failure: HubFailure } | { unknown: string[]; session?: SessionLease })[];
  acker: Acker;
  /** The session acks may name from now on (null: none, as on the principal leg). */
  setSession(session: string | null): void;
  /** Spools these ids as entries under `session` and returns their records' end offsets by seq. */
  spoolEntries(ids: readonly string[], session?: string): number[];
  close(): void;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function ackWorld(opts: { session?: string | null; pinned?: string | null } = {}): AckWorld {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-acks-'));
  dirs.push(dir);
  const opened = openStateDir(dir, { create: true });
  if (!opened.ok) throw new Error(opened.reason);
  const spool = opened.value.openSpool(fakeClock(Date.parse('2026-09-18T14:00:00.000Z')));
  const ledger = Ledger.open(dir);
  if (!spool.ok || !ledger.ok) throw new Error('state did not open');
  const acks: AckRequest[] = [];
  const answers: AckWorld['answers'] = [];
  const client: Pick<HubClient, 'ack'> = {
    ack: (body: AckRequest): Promise<HubResult<AckResult>> => {
      acks.push(structuredClone(body));
      const next = answers.shift();
      if (next && 'failure' in next) return Promise.resolve({ ok: false, failure: next.failure });
      const ids = [...(body.delivered ?? []), ...(body.acknowledged ?? [])];
      const unknown = next?.unknown ?? [];
      return Promise.resolve({
        ok: true,
        status: 200,
        serverDate: null,
        value: {
          delivered: body.delivered ? ids.length - unknown.length : 0,
          acknowledged: body.acknowledged ? ids.length - unknown.length : 0,
          unknown,
          session: next?.session ?? null,
        },
      });
    },
  };
  let current = opts.session === undefined ? 'sess_a' : opts.session;
  const logs: string[] = [];
  const renewals: SessionLease[] = [];
  const acker = new Acker({
    // The acker calls only ack(); the rest of the client is never reached.
    client: client as HubClient,
    ledger: ledger.value,
    stateDir: opened.value,
    spool: spool.value,
    currentSession: () => current,
    pinned: opts.pinned ?? null,
    renewed: (lease) => renewals.push(lease),
    log: (t) => logs.push(t),
    signal: new AbortController().signal,
  });
  return {
    dir,
    stateDir: opened.value,
    spool: spool.value,
    ledger: ledger.value,
    acks,
    logs,
    renewals,
    answers,
    acker,
    setSession: (session) => {
      current = session;
    },
    spoolEntries(ids, session = 'sess_a') {
      const written = spool.value.append(ids.map((id) => ({ type: 'entry' as const, session, entry: { id, text: `text of ${id}` }, signature: 'sig' })));
      ledger.value.recordSpooled(written.map((r) => ({ id: r.type === 'entry' ? r.entry.id : '', seq: r.seq, session })));
      return spool.value.readAfter(0).map((i) => i.end);
    },
    close() {
      spool.value.close();
      ledger.value.close();
    },
  };
}
