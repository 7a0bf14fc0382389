import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAddress } from '../../../src/hub/contract/index.js';
import {
  claimPage,
  insertEntry,
  moveToPrincipal,
  readPage,
  releaseClaims,
  setEntryState,
  type EntryRow,
  type Mailbox,
} from '../../../src/hub/server/entries.js';
import type { HubServer } from '../../../src/hub/server/server.js';
import type { Tx } from '../../../src/hub/server/sql.js';
import { readSqlitePage } from '../../../src/hub/server/sqlite-pages.js';
import { inProcessHub, notifyEntry } from '../../integration/hub/in-process.js';

// Issue 19 row 3: on SQLite a stream that had seen everything pending in its mailbox is handed the
// rows its wake-up concerns from memory (RecentEntries), not read back. Its page must be exactly the
// store's, whatever the batches since did: inserts, acks, expiries, claims, releases, bounces, moves
// to the principal mailbox, a unit rolled back inside a batch. Seeded, so a failure repeats.

const agentId = 'agt_memory';
const boxes: Mailbox[] = [
  { agentId, sessionId: 'sess_a' },
  { agentId, sessionId: 'sess_b' },
  { agentId, sessionId: null },
];

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

/** An in-process SQLite Hub in a temp dir of its own for the describe block it is called in. */
function inProcessHubFor(prefix: string): { core: HubServer['core'] } {
  let dir: string;
  let hub: HubServer | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), prefix));
    hub = await inProcessHub(dir);
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get core() {
      return hub!.core;
    },
  };
}

describe('a SQLite stream page from memory', () => {
  const hub = inProcessHubFor('oh-hai-push-memory-');

  it('is the page the store gives, after any mix of batches (300 seeded rounds)', async () => {
    const random = rng(19);
    const pick = <T>(xs: readonly T[]): T | undefined => xs[Math.floor(random() * xs.length)];
    // What a batch changes is mostly what the last ones inserted (an ack follows its push).
    const recent = <T>(xs: readonly T[]): T | undefined => pick(xs.slice(-3));
    const q = hub.core.store.read;
    // Statements outside a unit: a page read from memory runs none.
    let statements = 0;
    const all = q.all.bind(q);
    q.all = async <T>(sql: string, ...p: Parameters<typeof all>[1][]) => {
      statements += 1;
      return all<T>(sql, ...p);
    };
    const pending = async (): Promise<EntryRow[]> => all<EntryRow>(`SELECT * FROM entries WHERE state = 'pending' ORDER BY seq`);
    const to = () =>
      pick([
        { agentId, sessionId: 'sess_a' },
        { agentId, sessionId: 'sess_b' },
        { agentId, sessionId: null },
      ])!;
    let n = 0;
    const units: Array<(tx: Tx, rows: EntryRow[]) => Promise<void>> = [
      async (tx) => {
        const t = to();
        await insertEntry(tx, notifyEntry(formatAddress(t.agentId, t.sessionId), `m${n++}`), t, null);
      },
      async (tx) => {
        const t = to();
        await insertEntry(tx, notifyEntry(formatAddress(t.agentId, t.sessionId), `m${n++}`), t, null);
      },
      async (tx, rows) => {
        const r = recent(rows);
        if (r) await tx.run(`UPDATE entries SET delivered = 1, state = 'acknowledged' WHERE id = ?`, r.id);
      },
      async (tx, rows) => {
        const r = recent(rows);
        if (r) await tx.run(`UPDATE entries SET state = 'expired' WHERE id = ? AND state = 'pending'`, r.id);
      },
      async (tx, rows) => {
        const free = rows.filter((r) => r.to_session === null && r.claimed_session === null);
        if (free.length > 0) await claimPage(tx, boxes[Math.floor(random() * 2)]!, free.slice(-1));
      },
      async (tx) => releaseClaims(tx, pick(['sess_a', 'sess_b'])!, agentId),
      async (tx, rows) => {
        const r = recent(rows);
        if (r) await setEntryState(tx, r.id, 'bounced');
      },
      async (tx, rows) => {
        const r = recent(rows.filter((x) => x.to_session !== null));
        if (r) await moveToPrincipal(tx, r);
      },
      async (tx) => {
        const t = to();
        await insertEntry(tx, notifyEntry(formatAddress(t.agentId, t.sessionId), `undone${n++}`), t, null);
        throw new Error('rolled back');
      },
    ];
    // The claim's check that the session is active: both sessions are.
    await hub.core.store.write(async (tx) => {
      await tx.run(`INSERT INTO agents (id, label, token_hash, created_at) VALUES (?, 'm', 'h', 0)`, agentId);
      for (const id of ['sess_a', 'sess_b'])
        await tx.run(
          `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at) VALUES (?, ?, ?, 'active', 60, 9999999999999, 0, 0)`,
          id,
          agentId,
          id,
        );
    });
    const after = new Map<Mailbox, number>(boxes.map((b) => [b, 0]));
    let fromMemory = 0;
    for (let round = 0; round < 300; round++) {
      const rows = await pending();
      // One to three units in one batch (started in one turn), the second of a batch sometimes a send.
      const count = 1 + Math.floor(random() * 3);
      const chosen = Array.from({ length: count }, () => (random() < 0.6 ? units[Math.floor(random() * 2)]! : pick(units)!));
      await Promise.allSettled(chosen.map((u) => hub.core.store.write((tx) => u(tx, rows))));
      for (const box of boxes) {
        // Streams are not all woken by every batch: some read only now and then.
        if (random() < 0.3) continue;
        if (random() < 0.05) after.set(box, 0);
        // A stream reads page after page until one stops short of its bound (stream.ts).
        for (let more = true; more;) {
          const bound = { limit: 1 + Math.floor(random() * 4), maxBytes: 1 << 20 };
          const from = after.get(box)!;
          const before = statements;
          const page = await readSqlitePage(q, box, from, bound);
          if (statements === before) fromMemory += 1;
          expect(page, JSON.stringify({ round, box, from })).toEqual(await readPage({ ...q, all }, box, from, bound));
          if (page.rows.length > 0) after.set(box, Math.max(from, page.rows[page.rows.length - 1]!.seq));
          more = page.more;
        }
      }
    }
    q.all = all;
    console.log(`${fromMemory} of the pages compared were read from memory`);
    expect(fromMemory).toBeGreaterThan(50);
  });
});

describe('what puts an entry back in a pending set is never answered from memory', () => {
  const hub = inProcessHubFor('oh-hai-push-memory-back-');

  const bound = { limit: 100, maxBytes: 1 << 20 };
  const agent = (id: string) =>
    hub.core.store.write(async (tx) => {
      await tx.run(`INSERT INTO agents (id, label, token_hash, created_at) VALUES (?, 'm', ?, 0)`, id, `h_${id}`);
      for (const s of ['a', 'b'])
        await tx.run(
          `INSERT INTO sessions (id, agent_id, client_key, state, lease_seconds, expires_at, last_renewed_at, created_at) VALUES (?, ?, ?, 'active', 60, 9999999999999, 0, 0)`,
          `${id}_${s}`,
          id,
          s,
        );
    });
  const send = (to: Mailbox, text: string) =>
    hub.core.store.write((tx) => insertEntry(tx, notifyEntry(formatAddress(to.agentId, to.sessionId), text), to, null));
  const texts = (rows: EntryRow[]) => rows.map((r) => (JSON.parse(r.body) as { text: string }).text);
  /** A stream's page after `after`, checked against the store's. */
  const page = async (box: Mailbox, after: number) => {
    const got = await readSqlitePage(hub.core.store.read, box, after, bound);
    expect(got).toEqual(await readPage(hub.core.store.read, box, after, bound));
    return got;
  };

  it('a released claim', async () => {
    await agent('agt_rel');
    const a = { agentId: 'agt_rel', sessionId: 'agt_rel_a' };
    const b = { agentId: 'agt_rel', sessionId: 'agt_rel_b' };
    await send({ agentId: 'agt_rel', sessionId: null }, 'principal');
    const [r] = (await readPage(hub.core.store.read, b, 0, bound)).rows;
    await hub.core.store.write((tx) => claimPage(tx, b, [r!]));
    // a has seen everything pending for it (nothing: b holds the claim), then b lets go.
    expect((await page(a, 0)).rows).toEqual([]);
    await hub.core.store.write((tx) => releaseClaims(tx, b.sessionId, b.agentId));
    expect(texts((await page(a, 0)).rows)).toEqual(['principal']);
  });

  it('an entry moved to the principal mailbox', async () => {
    await agent('agt_mv');
    const principal = { agentId: 'agt_mv', sessionId: null };
    const a = { agentId: 'agt_mv', sessionId: 'agt_mv_a' };
    await send(a, 'to a');
    expect((await page(principal, 0)).rows).toEqual([]);
    const [r] = (await readPage(hub.core.store.read, a, 0, bound)).rows;
    await hub.core.store.write((tx) => moveToPrincipal(tx, r!));
    expect(texts((await page(principal, 0)).rows)).toEqual(['to a']);
  });

  it('an entry whose state is set back to pending', async () => {
    await agent('agt_st');
    const a = { agentId: 'agt_st', sessionId: 'agt_st_a' };
    await send(a, 'once');
    const [r] = (await page(a, 0)).rows;
    await hub.core.store.write((tx) => setEntryState(tx, r!.id, 'expired'));
    expect((await page(a, 0)).rows).toEqual([]);
    await hub.core.store.write((tx) => setEntryState(tx, r!.id, 'pending'));
    expect(texts((await page(a, 0)).rows)).toEqual(['once']);
  });
});
