import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type CallResult, type TestHub } from '../../helpers/hub.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14: a send to a session address decides from the recipient session (active, unexpired)
// and commits later; a close of that session bounces the entries pending in it. A close that
// commits between the two must not leave the new entry pending in a CLOSED session: nothing reads
// a closed session's mailbox, so the message would stay `queued` for the 7-day TTL and then expire
// with reason message_ttl, where MA2H §3/§8 say it bounces with session_closed. The race is made
// deterministic with the recipient's (or an earlier sender's) advisory lock held from a test
// connection: it stops the send after its decision, or the close after its scan of the pending
// mail, while the other side runs. Both paths are raced: the one statement (a minted recipient) and
// the unit it falls back to (a recipient only MA2H_AGENT_TOKENS names has no agent row).
describe('a send and a close of its recipient session racing (PostgreSQL)', () => {
  const configured = { id: `agt_${randomBytes(12).toString('hex')}`, token: randomBytes(24).toString('hex') };
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: TestHub;
  let sender: { id: string; token: string };
  let minted: { id: string; token: string };
  beforeAll(async () => {
    db = await freshDatabase();
    h = await startHub({ database: db.url, env: { MA2H_AGENT_TOKENS: `${configured.id}=${configured.token}` } });
    sender = await h.mintAgent('sender');
    minted = await h.mintAgent('recipient');
  });
  afterAll(async () => {
    await h?.dispose();
    await db?.drop();
  });

  /** A request in flight, and whether it has answered. */
  const inFlight = (p: Promise<CallResult>) => {
    const r = { done: false, answer: p };
    void p.finally(() => (r.done = true));
    return r;
  };
  /** Backends of this database waiting for an advisory lock, or for a row (another transaction's). */
  const waiting = async (on: 'advisory' | 'row') =>
    (
      await sql<{ n: number }>(
        db.url,
        `SELECT CAST(COUNT(*) AS INTEGER) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = ANY($1)`,
        [on === 'advisory' ? ['advisory'] : ['transactionid', 'tuple']],
      )
    )[0]!.n;
  /** `agentId`'s advisory lock (messages.ts AGENT_LOCK), held by a transaction of the test's until released. */
  const holdAgentLock = async (agentId: string) => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query('BEGIN');
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [agentId]);
    return async () => {
      await c.query('ROLLBACK');
      await c.end();
    };
  };
  const openSession = async (who: { token: string }) => {
    const r = await hubCall(h, 'POST', '/v1/sessions', { token: who.token, body: { client_key: `ck-${Math.random()}`, lease_seconds: 300 } });
    expect(r.status, r.text).toBe(201);
    return r.body.session as { id: string; address: string };
  };
  const send = (to: string, text: string, token = sender.token) => hubCall(h, 'POST', '/v1/messages', { token, body: { to, intent: 'ask', text } });
  const close = (id: string, who: { token: string }) => hubCall(h, 'POST', `/v1/sessions/${id}/close`, { token: who.token });
  const pendingIn = async (sessionId: string) =>
    (await sql<{ id: string }>(db.url, `SELECT id FROM entries WHERE to_session = $1 AND state = 'pending'`, [sessionId])).map((r) => r.id);
  /**
   * `request` made while `agentId`'s lock is held (it decides from the session, then waits for the
   * lock), then the close of the session by `owner`, then the lock released: the request's answer,
   * once the close answered 200 and left nothing pending in the session.
   */
  const decidedThenClosed = async (agentId: string, request: () => Promise<CallResult>, sessionId: string, owner: { token: string }) => {
    const release = await holdAgentLock(agentId);
    let deciding: ReturnType<typeof inFlight>, closing: ReturnType<typeof inFlight>;
    try {
      deciding = inFlight(request());
      await waitFor(async () => (await waiting('advisory')) === 1, { what: 'the request waiting for the agent lock' });
      closing = inFlight(close(sessionId, owner));
      // Unguarded, the close commits now; guarded, it waits for the request's share lock on the session row.
      await waitFor(async () => closing.done || (await waiting('row')) === 1, { what: 'the close answered, or waiting for the request' });
    } finally {
      await release();
    }
    const [made, closed] = await Promise.all([deciding.answer, closing.answer]);
    expect(closed.status, closed.text).toBe(200);
    expect(closed.body.session.state).toBe('closed');
    expect(await pendingIn(sessionId)).toEqual([]);
    return made;
  };

  for (const [path, recipient] of [
    ['the one statement', () => minted],
    ['the unit', () => configured],
  ] as const) {
    it(`${path}: a close committed after the send decided waits for it, and bounces its entry (the sender is told)`, async () => {
      const to = await openSession(recipient());
      // The send decides (the session is active), then waits for the recipient's lock.
      const sent = await decidedThenClosed(recipient().id, () => send(to.address, 'decided before the close'), to.id, recipient());
      expect(sent.status, sent.text).toBe(202);
      const m = await hubCall(h, 'GET', `/v1/messages/${sent.body.message.id}`, { token: sender.token });
      expect(m.body.message).toMatchObject({ state: 'bounced', prior: 'queued' });
      const receipts = await sql<{ body: string }>(db.url, `SELECT body FROM entries WHERE to_agent = $1 AND kind = 'receipt' AND message_id IS NULL`, [
        sender.id,
      ]);
      expect(receipts.map((r) => JSON.parse(r.body))).toContainEqual(
        expect.objectContaining({ message_id: sent.body.message.id, status: 'bounced', prior: 'queued', reason: 'session_closed' }),
      );
    });

    it(`${path}: a send made while a close is under way waits for it, then is refused 410 session_closed`, async () => {
      const to = await openSession(recipient());
      // Mail already pending from another agent: bouncing it, the close sends that agent a receipt, under its lock.
      const early = await h.mintAgent('early');
      expect((await send(to.address, 'pending before the close', early.token)).status).toBe(202);
      const release = await holdAgentLock(early.id);
      let sending: ReturnType<typeof inFlight>, closing: ReturnType<typeof inFlight>;
      try {
        closing = inFlight(close(to.id, recipient()));
        // The close has marked the session closed and scanned its pending mail; it is not committed.
        await waitFor(async () => (await waiting('advisory')) === 1, { what: 'the close waiting for the earlier sender agent lock' });
        sending = inFlight(send(to.address, 'sent during the close'));
        // Unguarded, the send reads the session as its snapshot has it (active) and commits; guarded, it waits for the close.
        await waitFor(async () => sending.done || (await waiting('row')) === 1, { what: 'the send answered, or waiting for the close' });
      } finally {
        await release();
      }
      const [sent, closed] = await Promise.all([sending.answer, closing.answer]);
      expect(closed.status, closed.text).toBe(200);
      expect(sent.status, sent.text).toBe(410);
      expect(sent.body.error).toEqual({ code: 'session_closed', message: `session ${to.id} is closed; it receives no more mail`, state: 'closed' });
      expect(await pendingIn(to.id)).toEqual([]);
    });
  }

  it('a response: a close of the asking session committed after the response decided waits for it, and bounces it', async () => {
    const responder = await h.mintAgent('responder');
    const asking = await openSession(sender);
    const ask = await hubCall(h, 'POST', '/v1/messages', {
      token: sender.token,
      body: { to: `agent:${responder.id}`, intent: 'ask', text: 'q?', session: asking.id },
    });
    expect(ask.status, ask.text).toBe(202);
    const respond = () => hubCall(h, 'POST', `/v1/messages/${ask.body.message.id}/respond`, { token: responder.token, body: { text: 'a' } });
    const answered = await decidedThenClosed(sender.id, respond, asking.id, sender);
    expect(answered.status, answered.text).toBe(201);
    const m = await hubCall(h, 'GET', `/v1/messages/${answered.body.message.id}`, { token: responder.token });
    expect(m.body.message).toMatchObject({ state: 'bounced', prior: 'queued' });
  });
});
