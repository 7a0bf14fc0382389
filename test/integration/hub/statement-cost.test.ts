import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STORE_FILE } from '../../../src/hub/server/files.js';
import type { Param } from '../../../src/hub/server/sql.js';
import { dropRowLock, openStore } from '../../../src/hub/server/store.js';
import { waitFor } from '../../helpers/wait.js';
import { inProcessFixture, statementsRun, type RanStatement } from './in-process.js';
import { openSse, type SseConn, type SseEvent } from './sse.js';

// Issue 19 (sends/s with 5,000 streams open): what the SQLite store runs for a send and its push,
// counted, never timed.
// - A push's page is one statement per keyset arm of the mailbox and one for its rows. The one
//   statement that merged them (two materialised tables, three sorts) cost ~890 K instructions
//   for a one-entry page, a fifth of a whole send and push.
// - No statement is compiled again when it runs. SQLite re-plans a statement whose plan used a
//   bound value — a bound LIMIT; since 3.54, an equality the ORDER BY follows — every time that
//   value is bound: ~50 K instructions a run, three runs per push and the merged page statement
//   (~750 K) before. Counted where SQLite reports compiles to the caller (node:sqlite's
//   authorizer, Node 24); the statements are the ones every driver runs.

const PUSHES = 4;

const deliveries = (e: SseEvent) => (JSON.parse(e.data) as { messages: { entry: { id: string; text: string } }[] }).messages;

/** node:sqlite's DatabaseSync where it can tell who compiles what (setAuthorizer: Node 24), else why not. */
function compileCounter(): { ok: true; open: (file: string) => AuthorizedDb } | { ok: false; reason: string } {
  let mod: { DatabaseSync: new (file: string) => AuthorizedDb };
  try {
    mod = createRequire(import.meta.url)('node:sqlite') as typeof mod;
  } catch {
    return { ok: false, reason: `Node ${process.version} has no node:sqlite` };
  }
  if (typeof mod.DatabaseSync.prototype.setAuthorizer !== 'function') {
    return { ok: false, reason: `node:sqlite on Node ${process.version} has no setAuthorizer (Node 24 has)` };
  }
  return { ok: true, open: (file) => new mod.DatabaseSync(file) };
}

interface AuthorizedDb {
  prepare(sql: string): { all(...params: Param[]): unknown[] };
  exec(sql: string): void;
  setAuthorizer(callback: (() => number) | null): void;
  close(): void;
}

describe('what SQLite runs for a send and its push', () => {
  const f = inProcessFixture('statement-cost');
  const { call, streams } = f;

  const ran: RanStatement[] = [];
  const recorded = async (fn: () => Promise<void>): Promise<RanStatement[]> => {
    const seen = await statementsRun(f.hub, fn);
    ran.push(...seen);
    return seen;
  };

  it(`${PUSHES} sends to a streamed session: each push reads its page with one statement per keyset arm and one for its rows, none sorting or materialising`, async () => {
    const sender = await call(f.human, 'POST', '/v1/account/agents', { label: 'sender' });
    const recipient = await call(f.human, 'POST', '/v1/account/agents', { label: 'recipient' });
    const sessions: Array<{ id: string; address: string }> = [];
    const conns: SseConn[] = [];
    for (let i = 0; i < 2; i++) {
      const s = (await call(recipient.token, 'POST', '/v1/sessions', { client_key: `s${i}` })).session;
      const conn = await openSse(`${f.hub.url}/v1/inbox/stream?session=${s.id}`, { token: recipient.token });
      await conn.next((e) => e.event === 'open');
      streams.push(conn);
      conns.push(conn);
      sessions.push(s);
    }
    const pushed = (i: number) => conns[i]!.events.filter((e) => e.event === 'entries').flatMap(deliveries);
    // Warm: each statement of the path has been prepared once before anything is counted.
    await call(sender.token, 'POST', '/v1/messages', { to: sessions[0]!.address, intent: 'notify', text: 'warm' });
    await waitFor(() => pushed(0).length === 1 || undefined, { what: 'the warm push' });

    const [s0, s1] = sessions as [{ id: string; address: string }, { id: string; address: string }];
    const seen = await recorded(async () => {
      for (let i = 0; i < PUSHES; i++) {
        await call(sender.token, 'POST', '/v1/messages', { to: s0.address, intent: 'notify', text: `push ${i}` });
        await waitFor(() => pushed(0).length === i + 2 || undefined, { what: `push ${i}` });
        await call(recipient.token, 'POST', '/v1/inbox/ack', { session: s0.id, acknowledged: [pushed(0)[i + 1]!.entry.id] });
      }
      // Principal mail: claimed by one of the streams in a unit of its own, then acknowledged.
      await call(sender.token, 'POST', '/v1/messages', { to: `agent:${recipient.agent.id}`, intent: 'notify', text: 'principal' });
      const { claimed } = await waitFor(
        () => [0, 1].map((claimed) => ({ claimed })).find(({ claimed }) => pushed(claimed).some((d) => d.entry.text === 'principal')),
        { what: 'the principal push' },
      );
      const got = pushed(claimed).find((d) => d.entry.text === 'principal')!;
      await call(recipient.token, 'POST', '/v1/inbox/ack', { session: sessions[claimed]!.id, acknowledged: [got.entry.id] });
      // Drains: a session's and the principal mailbox's.
      await call(recipient.token, 'GET', `/v1/inbox?session=${s1.id}&limit=10`);
      await call(recipient.token, 'GET', '/v1/inbox?limit=10');
    });

    // A page read is a read of the entries table outside a unit by keyset or by seq.
    const pages = seen.filter((r) => r.where === 'read' && /FROM entries\s+WHERE .*(seq > |seq IN \()/s.test(r.sql));
    console.log(`${PUSHES} pushes + 1 principal push: ${pages.length} page statements, ${seen.length} statements in all`);
    // PUSHES pushes to session 0 and one principal push: three arms and one rows statement each;
    // the other stream's wake-up for the principal entry reads its arms (and maybe its rows).
    expect(pages.length).toBeGreaterThanOrEqual(4 * (PUSHES + 1));
    expect(pages.length).toBeLessThanOrEqual(4 * (PUSHES + 2));
    const plans = await Promise.all(
      [...new Set(pages.map((p) => p.sql))].map(async (sql) => ({
        sql,
        plan: (
          await f.hub.core.store.read.all<{ detail: string }>(
            `EXPLAIN QUERY PLAN ${sql}`,
            ...sql
              .split('?')
              .slice(1)
              .map(() => 1),
          )
        ).map((p) => p.detail),
      })),
    );
    for (const { sql, plan } of plans) {
      expect(plan.join('\n'), sql).not.toMatch(/TEMP B-TREE|MATERIALIZE|CO-ROUTINE|SCAN entries/);
      expect(
        plan.some((d) => /^SEARCH entries /.test(d)),
        `${sql}\n${plan.join('\n')}`,
      ).toBe(true);
    }
  });

  const counter = compileCounter();
  if (!counter.ok) console.warn(`statement compiles per run SKIPPED: ${counter.reason}`);
  else {
    it('no statement of a send, push, claim, ack or drain is compiled again when it runs', async () => {
      expect(ran.length).toBeGreaterThan(0);
      // A store with the Hub's schema, then every statement above replayed on it with the
      // parameters it ran with, each prepared first and counted while it runs.
      const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-compiles-'));
      try {
        openStore(dir).close();
        const db = counter.open(path.join(dir, STORE_FILE));
        const recompiled = new Map<string, number>();
        // Set once, before anything is prepared: setting an authorizer expires every statement.
        let compiles = 0;
        db.setAuthorizer(() => ((compiles += 1), 0));
        try {
          for (const r of ran.flatMap((r) => r.inserts ?? [r])) {
            const sql = dropRowLock(r.sql);
            const statement = db.prepare(sql);
            db.exec('BEGIN');
            const before = compiles;
            try {
              statement.all(...r.params);
            } catch {
              // A replayed write may break a constraint on this empty store: it ran, compiled or not.
            } finally {
              if (compiles > before) recompiled.set(sql.replace(/\s+/g, ' '), compiles - before);
              db.exec('ROLLBACK');
            }
          }
        } finally {
          db.close();
        }
        expect([...recompiled.keys()], 'statements SQLite compiled again to run them').toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
