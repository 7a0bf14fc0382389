import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit } from '../../../src/hub/server/commit.js';
import { openSqlite, type SqliteDatabase } from '../../../src/hub/server/sqlite-driver.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from './sse.js';
import { eachSqliteDriver } from './sqlite-drivers.js';

// The Hub's write path commits in groups: requests in flight together share one
// transaction (one fsync), each in its own savepoint, and none is answered before the
// commit returned. Module-level checks on a real SQLite file, then the real Hub process.

describe.each(eachSqliteDriver())('GroupCommit on a real SQLite store (WAL, synchronous=FULL), driver $driver', ({ driver }) => {
  let dir: string;
  let db: SqliteDatabase;
  let effectErrors: unknown[];
  let batches: number;
  let commits: GroupCommit;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-commit-'));
    db = openSqlite(path.join(dir, 'test.sqlite'), driver);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.exec(`CREATE TABLE parent (id TEXT PRIMARY KEY);
             CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
             CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT NOT NULL)`);
    effectErrors = [];
    batches = 0;
    commits = new GroupCommit(db, { committed: () => batches++, effectFailed: (e) => effectErrors.push(e) });
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const notes = () => (db.prepare('SELECT text FROM note ORDER BY id').all() as { text: string }[]).map((r) => r.text);
  const insert = (text: string) => db.prepare('INSERT INTO note (text) VALUES (?)').run(text);

  it('runs units queued together in ONE transaction: a deferred constraint one unit leaves open, a later unit satisfies', async () => {
    // In separate transactions the first commit would fail its foreign key; in one it holds.
    const orphan = commits.run(() => db.prepare('INSERT INTO child (id, parent) VALUES (?, ?)').run('c1', 'p1').changes);
    const parent = commits.run(() => db.prepare('INSERT INTO parent (id) VALUES (?)').run('p1').changes);
    await expect(Promise.all([orphan, parent])).resolves.toEqual([1, 1]);
    expect(db.prepare('SELECT parent FROM child').get()).toEqual({ parent: 'p1' });
    expect(batches).toBe(1);
    // A unit queued after the batch ran waits for the next one.
    await commits.run(() => insert('later'));
    expect(batches).toBe(2);
  });

  it('rolls back only the unit that throws, and answers only it with its error', async () => {
    const boom = new Error('this unit fails in the store');
    const settled = await Promise.allSettled([
      commits.run(() => (insert('one'), 'first')),
      commits.run(() => {
        insert('half-written');
        throw boom;
      }),
      commits.run(() => (insert('three'), 'third')),
    ]);
    expect(settled).toEqual([
      { status: 'fulfilled', value: 'first' },
      { status: 'rejected', reason: boom },
      { status: 'fulfilled', value: 'third' },
    ]);
    expect(notes()).toEqual(['one', 'three']);
    expect(batches).toBe(1);
  });

  it('settles nothing before the COMMIT, and rejects every unit of a batch whose COMMIT fails', async () => {
    const seen: string[] = [];
    const units = [
      commits.run(() => insert('a')).then(() => seen.push('a')),
      // A foreign key checked only at COMMIT: the commit of the whole batch fails.
      commits.run(() => db.prepare('INSERT INTO child (id, parent) VALUES (?, ?)').run('c2', 'nobody')).then(() => seen.push('child')),
      commits.run(() => insert('b')).then(() => seen.push('b')),
    ];
    const settled = await Promise.allSettled(units);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((settled[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/);
    expect(seen).toEqual([]);
    expect(notes()).toEqual([]);
    expect(db.inTransaction).toBe(false);
    expect(batches).toBe(0);
    // The next batch starts clean.
    await commits.run(() => insert('after'));
    expect(notes()).toEqual(['after']);
  });

  it('drain() waits for a batch queued but not yet started, so a store closed after it loses nothing', async () => {
    // idle() alone resolved at once here: the batch was only scheduled, and the store was
    // closed under it (an unhandled "database is not open" on node:sqlite).
    const queued = commits.run(() => insert('queued before close'));
    await commits.drain();
    await expect(queued).resolves.toBeDefined();
    expect(notes()).toEqual(['queued before close']);
  });

  it('a unit whose store closed before its batch ran is refused with the store error, never left unhandled', async () => {
    const late = commits.run(() => insert('too late'));
    db.close();
    // Each driver words it its own way (better-sqlite3: not open; node:sqlite: statement finalized).
    await expect(late).rejects.toThrow(/not open|finalized|closed/i);
    db = openSqlite(path.join(dir, 'test.sqlite'), driver);
    expect(notes()).toEqual([]);
  });

  it('runs after-commit effects once the batch is durable, only for units that succeeded, before their answers', async () => {
    const log: string[] = [];
    const ok = commits.run(() => {
      insert('kept');
      commits.afterCommit(() => log.push(`effect ok (in transaction: ${db.inTransaction}, rows: ${notes().length})`));
      return 'ok';
    });
    const failed = commits.run(() => {
      commits.afterCommit(() => log.push('effect of a failed unit'));
      throw new Error('no');
    });
    const throwing = commits.run(() => {
      commits.afterCommit(() => {
        throw new Error('effect broke');
      });
      return 'answer stands';
    });
    void ok.then(() => log.push('answer ok'));
    await expect(ok).resolves.toBe('ok');
    await expect(failed).rejects.toThrow('no');
    await expect(throwing).resolves.toBe('answer stands');
    expect(log).toEqual(['effect ok (in transaction: false, rows: 1)', 'answer ok']);
    expect(effectErrors.map(String)).toEqual(['Error: effect broke']);
    expect(batches).toBe(1);
    // Outside a batch the caller has committed already: the effect runs at once.
    commits.afterCommit(() => log.push('outside'));
    expect(log.at(-1)).toBe('outside');
  });

  it('answers a batch after what its committed hook started (a push reading the rows just committed), never before', async () => {
    // What a stream's page does when the hook wakes it: a read that waits for idle(), then more
    // awaits (sign, write). It used to wait for the answers too, so every 202 left before its push.
    const log: string[] = [];
    let wake = false;
    commits = new GroupCommit(db, {
      committed: () => {
        if (!wake) return;
        void (async () => {
          await commits.idle();
          log.push(`read after the commit (in transaction: ${db.inTransaction}, rows: ${notes().length})`);
          for (let step = 0; step < 20; step++) await null;
          log.push('pushed');
        })();
      },
      effectFailed: (e) => effectErrors.push(e),
    });
    wake = true;
    const answered = commits.run(() => insert('sent')).then(() => log.push('answered'));
    // A second unit of the same batch: one hook, and both answers after the push.
    const during = commits.run(() => insert('second')).then(() => log.push('second answered'));
    await Promise.all([answered, during]);
    expect(log).toEqual(['read after the commit (in transaction: false, rows: 2)', 'pushed', 'answered', 'second answered']);
  });
});

interface Sent {
  status: number;
  body: any;
}

// The kill -9 test runs last: it leaves the Hub restarted on the same data dir.
describe('reference Hub: requests in flight together, and kill -9 under them', () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await startHub();
  });
  afterAll(async () => {
    await hub.dispose();
  });

  it('answers each of N concurrent sends on its own: 202 for the good ones, its own error for the bad ones; each delivered exactly once', async () => {
    const sender = await hub.mintAgent('sender');
    const recipient = await hub.mintAgent('recipient');
    const reg = async (key: string) =>
      (await hubCall(hub, 'POST', '/v1/sessions', { token: recipient.token, body: { client_key: key } })).body.session as { id: string; address: string };
    const live = await reg('live');
    const closed = await reg('closed');
    expect((await hubCall(hub, 'POST', `/v1/sessions/${closed.id}/close`, { token: recipient.token })).status).toBe(200);
    const stream = await openSse(`${hub.url}/v1/inbox/stream?session=${live.id}`, { token: recipient.token });
    expect(stream.status).toBe(200);

    const N = 30;
    const send = (to: string, text: string): Promise<Sent> =>
      hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to, intent: 'notify', text } }).then((r) => ({ status: r.status, body: r.body }));
    const good = Array.from({ length: N }, (_, i) => send(live.address, `m${i}`));
    const nobody = send('agent:agt_nobody_here', 'to nobody');
    const ended = send(closed.address, 'to a closed session');
    const answers = await Promise.all([...good, nobody, ended]);

    const okAnswers = answers.slice(0, N);
    expect(okAnswers.map((a) => a.status)).toEqual(Array(N).fill(202));
    expect(answers[N]).toMatchObject({ status: 404, body: { error: { code: 'recipient_not_found' } } });
    expect(answers[N + 1]).toMatchObject({ status: 410, body: { error: { code: 'session_closed', state: 'closed' } } });
    const ids = okAnswers.map((a) => a.body.message.id as string);
    expect(new Set(ids).size).toBe(N);

    // Pushed on the open stream: every message once, nothing else.
    const pushedIds = () =>
      stream.events
        .filter((e) => e.event === 'entries')
        .flatMap((e) => (JSON.parse(e.data).messages as { entry: { message_id: string } }[]).map((d) => d.entry.message_id));
    await waitFor(() => pushedIds().length >= N, { what: `${N} pushes` });
    expect(pushedIds().sort()).toEqual([...ids].sort());
    stream.close();

    // Drained: the same set, each once, and the texts intact.
    const drained = (await hubCall(hub, 'GET', `/v1/inbox?session=${live.id}`, { token: recipient.token })).body.messages as { entry: any }[];
    expect(drained.map((d) => d.entry.message_id).sort()).toEqual([...ids].sort());
    expect(drained.map((d) => d.entry.text).sort()).toEqual(Array.from({ length: N }, (_, i) => `m${i}`).sort());
    // The failed sends left nothing behind at the Hub.
    const listed = (await hubCall(hub, 'GET', '/v1/messages?direction=sent&limit=500', { token: sender.token })).body.messages as { id: string }[];
    expect(listed.map((m) => m.id).sort()).toEqual([...ids].sort());
  });

  it('acks, drains and registrations in flight together each get their own answer', async () => {
    const sender = await hub.mintAgent('sender-2');
    const recipient = await hub.mintAgent('recipient-2');
    const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: recipient.token, body: { client_key: 'k' } })).body.session;
    const ids = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const r = await hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to: s.address, intent: 'notify', text: `x${i}` } });
        return r.body.message.id as string;
      }),
    );
    const entries = (await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: recipient.token })).body.messages.map((d: any) => d.entry.id) as string[];
    expect(entries).toHaveLength(10);
    const [acks, regs, drains] = await Promise.all([
      Promise.all(entries.map((id) => hubCall(hub, 'POST', '/v1/inbox/ack', { token: recipient.token, body: { session: s.id, acknowledged: [id] } }))),
      Promise.all(Array.from({ length: 5 }, (_, i) => hubCall(hub, 'POST', '/v1/sessions', { token: recipient.token, body: { client_key: `r${i}` } }))),
      Promise.all(Array.from({ length: 3 }, () => hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: recipient.token }))),
      hubCall(hub, 'POST', '/v1/inbox/ack', { token: recipient.token, body: { session: 'sess_not_mine', acknowledged: entries } }).then((r) => {
        expect(r.status).toBe(404);
      }),
    ]);
    expect(acks.map((a) => [a.status, a.body.acknowledged])).toEqual(Array(10).fill([200, 1]));
    expect(regs.map((r) => r.status)).toEqual(Array(5).fill(201));
    expect(new Set(regs.map((r) => r.body.session.id)).size).toBe(5);
    for (const d of drains) expect(d.status).toBe(200);
    const states = await Promise.all(ids.map(async (id) => (await hubCall(hub, 'GET', `/v1/messages/${id}`, { token: sender.token })).body.message.state));
    expect(states).toEqual(Array(10).fill('acknowledged'));
  });

  /** Every page of the sender's sent messages. */
  async function sentTo(token: string, address: string): Promise<string[]> {
    const ids: string[] = [];
    let before: string | null = null;
    for (;;) {
      const page: any = (await hubCall(hub, 'GET', `/v1/messages?direction=sent&limit=500${before ? `&before=${before}` : ''}`, { token })).body;
      for (const m of page.messages as { id: string; to: string }[]) if (m.to === address) ids.push(m.id);
      if (page.next === null) return ids;
      before = page.next;
    }
  }

  it('keeps every send that got its 202, and no send is half there (10 rounds)', async () => {
    const sender = await hub.mintAgent('crash-sender');
    const WORKERS = 40;
    const KILL_AFTER = 40;
    for (let round = 0; round < 10; round++) {
      const recipient = await hub.mintAgent(`crash-recipient-${round}`);
      const address = `agent:${recipient.id}`;
      const answered: string[] = [];
      let stopping = false;
      let seq = 0;
      const worker = async () => {
        while (!stopping) {
          const text = `r${round}-${seq++}`;
          let r;
          try {
            r = await hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to: address, intent: 'notify', text } });
          } catch {
            return; // the Hub died under this request: it never answered, so it promised nothing
          }
          if (r.status !== 202) throw new Error(`round ${round}: send answered ${r.status} ${r.text}`);
          answered.push(r.body.message.id as string);
        }
      };
      const workers = Array.from({ length: WORKERS }, worker);
      await waitFor(() => answered.length >= KILL_AFTER, { what: `round ${round}: ${KILL_AFTER} answered sends` });
      await hub.kill('SIGKILL');
      stopping = true;
      await Promise.all(workers);
      const promised = [...answered];
      expect(hub.proc.signalCode).toBe('SIGKILL');

      await hub.restart();
      const listed = await sentTo(sender.token, address);
      const drained = (await hubCall(hub, 'GET', '/v1/inbox?limit=1000', { token: recipient.token })).body.messages as { entry: any }[];
      const entryFor = drained.map((d) => d.entry.message_id as string);
      // Every 202 survived the kill.
      expect(
        promised.filter((id) => !listed.includes(id)),
        `round ${round}: answered but lost`,
      ).toEqual([]);
      // All or nothing: a message row always has its entry, an entry always its message, each once.
      expect(new Set(entryFor).size, `round ${round}: an entry twice`).toBe(entryFor.length);
      expect([...entryFor].sort(), `round ${round}: half-there sends`).toEqual([...listed].sort());
      expect(drained.every((d) => d.entry.text.startsWith(`r${round}-`))).toBe(true);
    }
  });
});
