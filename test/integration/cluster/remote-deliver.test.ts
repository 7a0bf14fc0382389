import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_METRICS } from '../../../src/hub/server/metrics.js';
import { openPostgres, parseDatabaseUrl, type PostgresHandle } from '../../../src/hub/server/postgres/index.js';
import { CHANNEL, notifyPayloads } from '../../../src/hub/server/postgres/wake-payload.js';
import { systemClock } from '../../../src/util/clock.js';
import { freshDatabase, sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14 (session 16): a wake-up heard from another instance went to the bus, which delivers on
// the loop's next turn: the stream it woke waited for the rest of the poll phase (every socket
// ready with it), and its page read, asked at the end of the turn it is queued in, for one more
// turn. A notification's wake-ups are now delivered at once, as this instance's own commits' are.
// Decided by the order of the calls, never by a time.

describe("PostgreSQL: another instance's wake-ups", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let handle: PostgresHandle;
  const order: string[] = [];
  beforeAll(async () => {
    db = await freshDatabase();
    const parsed = parseDatabaseUrl(db.url);
    if (!parsed.ok) throw new Error(parsed.reason);
    handle = await openPostgres({
      db: parsed.value,
      local: systemClock,
      offsetMs: 0,
      poolMax: 2,
      listenRetryMs: 50,
      wake: (topic, key, from) => {
        if (from === 'local') return;
        order.push(`${from} ${topic} ${key}`);
        setImmediate(() => order.push('next turn'));
      },
      resync: () => {},
      servingAgain: () => {},
      outdated: () => {},
      committed: () => order.push('delivered'),
      effectFailed: () => {},
      log: () => {},
      metrics: NO_METRICS,
    });
  });
  afterAll(async () => {
    await handle?.store.close();
    await db?.drop();
  });

  it('are delivered when the notification is heard, not on the next turn', async () => {
    // The start's own unit committed (the clock's calibration): only what the notification does counts.
    order.length = 0;
    const [payload] = notifyPayloads('another-instance', Date.now(), [
      ['mail', 'agt_x#sess_y'],
      ['message', 'msg_z'],
    ]);
    await sql(db.url, 'SELECT pg_notify($1, $2)', [CHANNEL, payload]);
    await waitFor(() => order.includes('next turn'), { what: 'the wake-up heard' });
    expect(order).toEqual(['remote mail agt_x#sess_y', 'remote message msg_z', 'delivered', 'next turn', 'next turn']);
  });
});
