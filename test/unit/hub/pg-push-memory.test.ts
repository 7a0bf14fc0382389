import { describe, expect, it } from 'vitest';
import { mailboxKey, type EntryRow, type EntryTarget, type Mailbox, type PendingPage } from '../../../src/hub/server/entries.js';
import { NotifiedEntries, type PayloadWake } from '../../../src/hub/server/postgres/page-memory.js';
import { remoteWakes } from '../../../src/hub/server/postgres/listener.js';
import type { WakeTopic } from '../../../src/hub/server/sql.js';

// Issue 14 (session 11): the PostgreSQL push from memory, as a model. One agent's entries commit in
// seq order on two instances ("here" and "there"); notifications reach this instance's listener in
// commit order, each at a moment of its own; this instance's own sends are answered before or after
// their echo; releases put claimed principal entries back; streams of two sessions page (from memory
// when it answers, else by a read whose snapshot is taken a while after it was sent) and claim
// principal entries as stream.ts does. Whatever the interleaving, no stream skips an entry of its
// mailbox, none goes back in seq order without a rewind, and once everything is heard and read
// every entry is with the stream it belongs to. Seeded, so a failure repeats.

const agentId = 'agt_model';
const sessions = ['sess_a', 'sess_b'];
const bound = { limit: 100, maxBytes: 1 << 20 };

/** A pending entry of the agent as inserted: `seq`, its session's mail (null: principal). */
const pendingRow = (seq: number, to: string | null, id = `ent_${seq}`): EntryRow => ({
  seq,
  id,
  kind: 'message',
  body: '{}',
  to_agent: agentId,
  to_session: to,
  claimed_session: null,
  message_id: `msg_${seq}`,
  created_at: seq,
  delivered: 0,
  state: 'pending',
  canonical: 1,
});

/** What an entry's insert wakes: its agent (drains) and its mailbox. */
const sendWakes = (to: string | null): Array<[WakeTopic, string]> => [
  ['mail', agentId],
  ['mail', mailboxKey(agentId, to)],
];

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

interface Stream {
  box: Mailbox;
  after: number;
  rewind: boolean;
  pushed: Set<string>;
  /** Seqs pushed since the last rewind, in order. */
  order: number[];
  /** A read sent (its mark), answered at a later step. */
  reading: { at: number; after: number } | null;
  woken: boolean;
}

function run(seed: number): { memoryPages: number; reads: number } {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const woken: string[] = [];
  const memory = new NotifiedEntries((key) => woken.push(key));
  const table: EntryRow[] = [];
  let seq = 0;
  /** Notifications committed and not yet handed on by this instance's listener, in commit order. */
  const queue: Array<{ own: boolean; wakes: Array<[WakeTopic, string]>; entry: string | null }> = [];
  /** This instance's sends committed and not answered yet. */
  const unanswered: Array<{ id: string; row: EntryRow; wakes: Array<[WakeTopic, string]> }> = [];
  const streams: Stream[] = sessions.map((sessionId) => ({
    box: { agentId, sessionId },
    after: 0,
    rewind: false,
    pushed: new Set(),
    order: [],
    reading: null,
    woken: false,
  }));
  let memoryPages = 0;
  let reads = 0;

  const wakeMailboxes = (keys: string[], released: boolean) => {
    for (const s of streams) {
      if (released) s.rewind = true;
      if (released || keys.includes(mailboxKey(agentId, s.box.sessionId)) || keys.includes(mailboxKey(agentId, null))) s.woken = true;
    }
  };
  const inBox = (box: Mailbox, r: EntryRow) =>
    r.state === 'pending' && (r.to_session === box.sessionId || r.claimed_session === box.sessionId || (r.to_session === null && r.claimed_session === null));
  const durable = (box: Mailbox, after: number): PendingPage => {
    const rows = table.filter((r) => r.seq > after && inBox(box, r)).map((r) => ({ ...r }));
    return { rows: rows.slice(0, bound.limit), more: rows.length > bound.limit, bytes: 0 };
  };

  const send = (here: boolean) => {
    const to: EntryTarget = { agentId, sessionId: random() < 0.3 ? null : pick(sessions) };
    const id = `ent_${seed}_${seq + 1}`;
    if (here) memory.sending(id, to);
    const row = pendingRow(++seq, to.sessionId, id);
    table.push(row);
    const wakes = sendWakes(to.sessionId);
    queue.push({ own: here, wakes, entry: here ? id : null });
    if (here) unanswered.push({ id, row: { ...row }, wakes });
  };

  const release = (here: boolean) => {
    const claimed = table.filter((r) => r.claimed_session !== null && r.state === 'pending');
    if (claimed.length === 0) return;
    pick(claimed).claimed_session = null;
    const wakes: Array<[WakeTopic, string]> = [['released', agentId]];
    queue.push({ own: here, wakes, entry: null });
    if (here) {
      memory.local(wakes);
      wakeMailboxes([], true);
    }
  };

  const ack = (here: boolean) => {
    const pending = table.filter((r) => r.state === 'pending');
    if (pending.length === 0) return;
    const r = pick(pending);
    r.state = 'acknowledged';
    const wakes: Array<[WakeTopic, string]> = [['message', r.message_id!]];
    queue.push({ own: here, wakes, entry: null });
    if (here) memory.local(wakes);
  };

  const answer = () => {
    if (unanswered.length === 0) return;
    const a = unanswered.splice(Math.floor(random() * unanswered.length), 1)[0]!;
    // Store.once: its wake-ups to the memory, its row (committed), then this instance's waiters.
    memory.local(a.wakes, a.id);
    memory.answered(a.id, a.row);
    wakeMailboxes(
      a.wakes.map(([, k]) => k),
      false,
    );
  };

  const listen = () => {
    const n = queue.shift();
    if (n === undefined) return;
    const wakes: PayloadWake[] = remoteWakes(n.wakes);
    memory.heard(wakes, n.entry === null ? [] : [n.entry], n.own);
    if (!n.own)
      wakeMailboxes(
        wakes.filter((w) => w.topic === 'mail').map((w) => w.key),
        wakes.some((w) => w.topic === 'released'),
      );
  };

  /** What a stream does with a page: claim its unclaimed principal rows (first claim wins), push what it has not pushed. */
  const take = (s: Stream, page: PendingPage) => {
    if (page.rows.length > 0) s.after = Math.max(s.after, page.rows[page.rows.length - 1]!.seq);
    for (const r of page.rows) {
      const stored = table.find((t) => t.seq === r.seq)!;
      if (r.to_session === null && r.claimed_session === null) {
        if (stored.claimed_session !== null || stored.state !== 'pending') continue;
        stored.claimed_session = s.box.sessionId;
      }
      if (s.pushed.has(r.id)) continue;
      // In seq order since the last rewind: a lower seq after a higher is a skip put right late, or a reorder.
      expect(s.order.length === 0 || r.seq > s.order[s.order.length - 1]!, `seed ${seed}: ${s.box.sessionId} pushed ${r.seq} after ${s.order.join(',')}`).toBe(
        true,
      );
      s.order.push(r.seq);
      s.pushed.add(r.id);
    }
    s.woken ||= page.more;
  };

  const page = (s: Stream) => {
    if (s.reading !== null) {
      // The read's snapshot: now, some steps after it was sent.
      const read = memory.read(s.box, s.reading.after, durable(s.box, s.reading.after), s.reading.at);
      s.reading = null;
      take(s, read);
      return;
    }
    if (!s.woken) return;
    s.woken = false;
    if (s.rewind) {
      s.rewind = false;
      s.after = 0;
      s.order = [];
    }
    const remembered = memory.page(s.box, s.after, bound);
    if (remembered !== null) {
      memoryPages += 1;
      // The store's page now, or a prefix of it that a later wake-up completes: nothing it would give is
      // skipped. A row it would not give any more is one taken out of the mailbox since it was inserted
      // (acked, claimed by the other session) and not heard of yet: a read sent a moment earlier gives it too.
      const got = remembered.rows.map((r) => r.seq);
      const last = got[got.length - 1] ?? s.after;
      const truth = durable(s.box, s.after).rows.map((r) => r.seq);
      expect(
        truth.filter((q) => q <= last && !got.includes(q)),
        `seed ${seed}: memory page of ${s.box.sessionId} after ${s.after} skips`,
      ).toEqual([]);
      for (const q of got.filter((g) => !truth.includes(g))) {
        const r = table.find((t) => t.seq === q)!;
        expect(
          r.state !== 'pending' || (r.claimed_session !== null && r.claimed_session !== s.box.sessionId),
          `seed ${seed}: ${q} never was ${s.box.sessionId}'s`,
        ).toBe(true);
      }
      take(s, remembered);
      return;
    }
    reads += 1;
    s.reading = { at: memory.mark(), after: s.after };
  };

  for (let step = 0; step < 400; step++) {
    const x = random();
    if (x < 0.2) send(true);
    else if (x < 0.3) send(false);
    else if (x < 0.33) release(random() < 0.5);
    else if (x < 0.36) ack(random() < 0.5);
    else if (x < 0.5) answer();
    else if (x < 0.7) listen();
    else if (x < 0.72 && random() < 0.1) memory.resync();
    else page(pick(streams));
    // The echo's wake-ups of streams waiting for it.
    for (const key of woken.splice(0)) wakeMailboxes([key], false);
  }
  // Everything answered, and paged (a stream may now wait for an echo), then heard; every stream
  // pages as long as it is woken: only wake-ups move it from here on, as on a Hub.
  const settle = () => {
    for (let round = 0; round < 10; round++) {
      for (const s of streams) {
        page(s);
        page(s);
        for (const key of woken.splice(0)) wakeMailboxes([key], false);
      }
    }
  };
  while (unanswered.length > 0) answer();
  settle();
  while (queue.length > 0) {
    listen();
    for (const key of woken.splice(0)) wakeMailboxes([key], false);
  }
  settle();
  for (const s of streams) {
    // Every pending entry of the session's own mail and every principal entry it claimed was pushed to it.
    const owed = table.filter((r) => r.state === 'pending' && (r.to_session === s.box.sessionId || r.claimed_session === s.box.sessionId));
    expect(
      owed.filter((r) => !s.pushed.has(r.id)).map((r) => r.seq),
      `seed ${seed}: ${s.box.sessionId} never got`,
    ).toEqual([]);
  }
  // No principal entry is left unclaimed while streams listen.
  expect(table.filter((r) => r.state === 'pending' && r.to_session === null && r.claimed_session === null).map((r) => r.seq)).toEqual([]);
  return { memoryPages, reads };
}

describe('PostgreSQL push from memory: a model of two instances, the listener and the streams', () => {
  it('300 seeded interleavings: no skip, no reorder, everything delivered; some pages from memory', () => {
    let memoryPages = 0;
    let reads = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const r = run(seed);
      memoryPages += r.memoryPages;
      reads += r.reads;
    }
    console.log(`memory pages ${memoryPages}, reads ${reads}`);
    expect(memoryPages).toBeGreaterThan(1000);
  });
});

describe('PostgreSQL push from memory: the cases one by one', () => {
  const box: Mailbox = { agentId, sessionId: 'sess_a' };
  const row = (seq: number): EntryRow => pendingRow(seq, 'sess_a');
  const own = (r: EntryRow): Array<[WakeTopic, string]> => sendWakes(r.to_session);
  /** A memory with `box` caught up through seq 1 by a read sent at its start. */
  const caughtUp = () => {
    const woken: string[] = [];
    const memory = new NotifiedEntries((key) => woken.push(key));
    memory.read(box, 0, { rows: [row(1)], more: false, bytes: 0 }, memory.mark());
    return { memory, woken };
  };
  const seqs = (p: PendingPage | null) => p?.rows.map((r) => r.seq) ?? null;

  it('a send answered before its echo: the stream waits (an empty page), the echo wakes its mailbox, the next page is the row, no read', () => {
    const { memory, woken } = caughtUp();
    const r = row(2);
    memory.sending(r.id, { agentId, sessionId: 'sess_a' });
    memory.local(own(r), r.id);
    memory.answered(r.id, r);
    expect(seqs(memory.page(box, 1, bound))).toEqual([]);
    expect(woken).toEqual([]);
    memory.heard(remoteWakes(own(r)), [r.id], true);
    expect(woken).toEqual([mailboxKey(agentId, 'sess_a')]);
    expect(seqs(memory.page(box, 1, bound))).toEqual([2]);
    // Caught up again: the next send is from memory too.
    const n = row(3);
    memory.sending(n.id, { agentId, sessionId: 'sess_a' });
    memory.heard(remoteWakes(own(n)), [n.id], true);
    memory.local(own(n), n.id);
    memory.answered(n.id, n);
    expect(seqs(memory.page(box, 2, bound))).toEqual([3]);
  });

  it("a send echoed before its answer takes its echo's place; until the answer nothing past the echo is served", () => {
    const { memory } = caughtUp();
    const [r, s] = [row(2), row(3)];
    for (const x of [r, s]) memory.sending(x.id, { agentId, sessionId: 'sess_a' });
    memory.heard(remoteWakes(own(r)), [r.id], true);
    memory.local(own(s), s.id);
    memory.answered(s.id, s);
    memory.heard(remoteWakes(own(s)), [s.id], true);
    // Row 3 is known and echoed, row 2 echoed before it and not answered: serving 3 would skip 2.
    expect(seqs(memory.page(box, 1, bound))).toEqual([]);
    memory.local(own(r), r.id);
    memory.answered(r.id, r);
    expect(seqs(memory.page(box, 1, bound))).toEqual([2, 3]);
  });

  it("another instance's entry heard before this instance's echo sends the stream to the store", () => {
    const { memory } = caughtUp();
    const r = row(3);
    memory.sending(r.id, { agentId, sessionId: 'sess_a' });
    memory.local(own(r), r.id);
    memory.answered(r.id, r);
    // Seq 2, committed elsewhere just before: heard first (commit order), then the echo of 3.
    memory.heard(remoteWakes(own(row(2))), [], false);
    memory.heard(remoteWakes(own(r)), [r.id], true);
    expect(memory.page(box, 1, bound)).toBeNull();
  });

  it('a row forgotten (past the rows remembered) sends only the streams of its mailbox that had not seen it to the store', () => {
    const woken: string[] = [];
    const memory = new NotifiedEntries((key) => woken.push(key));
    const other: Mailbox = { agentId, sessionId: 'sess_b' };
    for (const b of [box, other]) memory.read(b, 0, { rows: [], more: false, bytes: 0 }, memory.mark());
    for (let seq = 1; seq <= 1100; seq++) {
      const r = pendingRow(seq, 'sess_b');
      memory.sending(r.id, { agentId, sessionId: 'sess_b' });
      memory.local(own(r), r.id);
      memory.answered(r.id, r);
      memory.heard(remoteWakes(own(r)), [r.id], true);
    }
    // sess_b's first rows are forgotten: its stream reads. sess_a's stream had nothing forgotten: its next own send is from memory.
    expect(memory.page(other, 0, bound)).toBeNull();
    const r = row(1101);
    memory.sending(r.id, { agentId, sessionId: 'sess_a' });
    memory.local(own(r), r.id);
    memory.answered(r.id, r);
    memory.heard(remoteWakes(own(r)), [r.id], true);
    expect(seqs(memory.page(box, 0, bound))).toEqual([1101]);
  });

  it('a release, an ack of a remembered message, or a lost listener sends the stream to the store', () => {
    for (const change of ['released', 'message', 'resync'] as const) {
      const { memory } = caughtUp();
      const r = row(2);
      memory.sending(r.id, { agentId, sessionId: 'sess_a' });
      memory.local(own(r), r.id);
      memory.answered(r.id, r);
      memory.heard(remoteWakes(own(r)), [r.id], true);
      if (change === 'resync') memory.resync();
      else memory.heard(remoteWakes([[change, change === 'released' ? agentId : r.message_id!]]), [], false);
      expect(memory.page(box, 1, bound), change).toBeNull();
    }
  });
});
