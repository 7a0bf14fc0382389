import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { freshDatabase } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { openSse } from '../hub/sse.js';

// Issue 14: a PostgreSQL-backed Hub stopped (SIGTERM) with requests in flight — streams
// connecting, sends, held drains, over kept-alive connections — stops in order: it stops
// accepting, ends its streams, lets the statements under way finish, and only then ends its
// pool. Nothing it prints is a stack trace or an internal error, and no client gets a 500:
// a request is answered, refused with a clean 503, or its connection closes.

const WORKERS = 48;
const SESSIONS = 8;

describe('stopping a PostgreSQL-backed Hub with requests in flight', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: TestHub;
  beforeAll(async () => {
    db = await freshDatabase();
    // A small pool: at the stop, many requests are waiting for a connection or between statements.
    h = await startHub({ database: db.url, args: ['--stream-max-hold-seconds', '60'], env: { OH_HAI_HUB_DB_POOL_MAX: '2' } });
  });
  afterAll(async () => {
    await h?.dispose();
    await db?.drop();
  });

  it('exits 0, prints no stack trace and answers no request with a 500', async () => {
    const sender = await h.mintAgent('sender');
    const reader = await h.mintAgent('reader');
    const sessions: Array<{ id: string; address: string }> = [];
    for (let i = 0; i < SESSIONS; i++) {
      const r = await hubCall(h, 'POST', '/v1/sessions', { token: reader.token, body: { client_key: `k${i}`, lease_seconds: 300 } });
      expect(r.status, r.text).toBe(201);
      sessions.push(r.body.session);
    }
    const statuses = new Map<number, number>();
    const refusals = new Set<string>();
    const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    let stop = false;
    let done = 0;
    // One kind of request per worker, in a loop: connection errors once the Hub is gone are expected.
    const worker = async (n: number) => {
      const s = sessions[n % SESSIONS]!;
      while (!stop) {
        try {
          if (n % 3 === 0) {
            const c = await openSse(`${h.url}/v1/inbox/stream?session=${s.id}`, {
              token: reader.token,
              headers: { 'MA2H-Consumer': `home=home-${n}; host=hostA; pid=${1000 + n}` },
            });
            count(c.status);
            if (c.status !== 200) refusals.add(c.errorBody);
            c.close();
          } else {
            const r =
              n % 3 === 1
                ? await hubCall(h, 'POST', '/v1/messages', { token: sender.token, body: { to: s.address, intent: 'notify', text: `m${n}` } })
                : await hubCall(h, 'GET', `/v1/inbox?session=${s.id}&wait=2`, { token: reader.token });
            count(r.status);
            if (r.status >= 500) refusals.add(r.text);
          }
          done += 1;
        } catch {
          if (h.proc.exitCode !== null || h.proc.signalCode !== null) return;
        }
      }
    };
    const workers = Array.from({ length: WORKERS }, (_, n) => worker(n));
    await waitFor(() => done >= 150 || undefined, { timeoutMs: 60_000, what: '150 requests answered' });
    const code = await h.stop();
    stop = true;
    await Promise.all(workers);

    const { stdout, stderr } = h.output();
    expect(code).toBe(0);
    expect(stdout).toMatch(/^hub: stopped \(SIGTERM\)$/m);
    expect(stderr + stdout).not.toMatch(/^\s+at /m);
    expect(stderr + stdout).not.toMatch(/internal error|Cannot use a pool/);
    expect(statuses.get(500) ?? 0, [...refusals].join('\n')).toBe(0);
    // A refusal while stopping is the documented one.
    for (const body of refusals) expect(body).toMatch(/"code":"(unavailable|session_held)"/);
  });
});
