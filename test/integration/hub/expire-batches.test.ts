import { describe, expect, it } from 'vitest';
import { EXPIRE_BATCH } from '../../../src/hub/server/inbox.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

// Session 20 (lock12): after a long downtime the expiry sweep expired every due entry in one
// transaction, holding `entries` for 45 s at 1,000,000 rows (a migration and every writer on those
// rows waited). Now each sweep transaction expires a bounded batch, and a full batch asks for the
// next at once. Every receipt of one transaction carries that transaction's clock reading, so the
// receipts grouped by their created_at count the entries each transaction expired.
const TTL_SECONDS = 4;

describe('reference Hub: a backlog of due entries expires in batches', () => {
  it(`expires more than ${EXPIRE_BATCH} due entries, every one with its receipt, at most ${EXPIRE_BATCH} per transaction`, async () => {
    const total = 2 * EXPIRE_BATCH + 100;
    let first: TestHub | null = await startHub();
    let second: TestHub | null = null;
    try {
      const a = await first.mintAgent('a');
      const b = await first.mintAgent('b');
      const ids: string[] = [];
      const sendSome = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const r = await hubCall(first!, 'POST', '/v1/messages', { token: a.token, body: { to: `agent:${b.id}`, intent: 'notify', text: `m${ids.length}` } });
          expect(r.status, JSON.stringify(r.body)).toBe(202);
          ids.push(r.body.message.id as string);
        }
      };
      await Promise.all(Array.from({ length: 10 }, () => sendSome(total / 10)));
      const sent = Date.now();
      // Down for longer than the next instance's TTL: every entry is due when it starts. A TTL of
      // a few seconds, so the receipts it writes do not themselves expire before they are drained.
      expect(await first.stop()).toBe(0);
      await waitFor(() => Date.now() - sent > TTL_SECONDS * 1000 + 100, { what: 'the TTL to pass', timeoutMs: 30_000 });
      second = await startHub({
        args: ['--message-ttl-seconds', String(TTL_SECONDS)],
        dataDir: first.dataDir,
        signingKey: first.signingKey,
        ...(first.databaseUrl !== null ? { database: first.databaseUrl } : {}),
      });

      const receipts: { message_id: string; status: string; created_at: string }[] = [];
      await waitFor(
        async () => {
          const page = (await hubCall(second!, 'GET', '/v1/inbox', { token: a.token })).body.messages as {
            entry: (typeof receipts)[number] & { id: string };
          }[];
          if (page.length > 0) {
            receipts.push(...page.map((m) => m.entry));
            await hubCall(second!, 'POST', '/v1/inbox/ack', { token: a.token, body: { acknowledged: page.map((m) => m.entry.id) } });
          }
          return receipts.length >= total;
        },
        { timeoutMs: 60_000, what: `${total} expired receipts` },
      );
      expect(receipts.every((r) => r.status === 'expired')).toBe(true);
      expect(new Set(receipts.map((r) => r.message_id))).toEqual(new Set(ids));
      const perTransaction = new Map<string, number>();
      for (const r of receipts) perTransaction.set(r.created_at, (perTransaction.get(r.created_at) ?? 0) + 1);
      expect(Math.max(...perTransaction.values())).toBeLessThanOrEqual(EXPIRE_BATCH);
      expect(perTransaction.size).toBeGreaterThanOrEqual(3);
      for (const id of [ids[0]!, ids[total - 1]!])
        expect((await hubCall(second, 'GET', `/v1/messages/${id}`, { token: a.token })).body.message.state).toBe('expired');
    } finally {
      await second?.dispose();
      await first?.dispose();
      first = null;
    }
  }, 120_000);
});
