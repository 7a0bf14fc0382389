import { describe, expect, it } from 'vitest';
import { ACK_CHUNK, planAcknowledged, planDelivered, type PendingAck } from '../../../src/consumer/acks.js';

const p = (id: string, seq: number, session: string | null, state: PendingAck['state'] = 'delivered'): PendingAck => ({ id, seq, session, state });

describe('planAcknowledged', () => {
  it('acks exactly the entries the cursor has passed, never one beyond it', () => {
    const pending = [p('e1', 1, 'sess_a'), p('e2', 2, 'sess_a'), p('e3', 3, 'sess_a')];
    expect(planAcknowledged(pending, 2, 'sess_a')).toEqual([{ session: 'sess_a', ids: ['e1', 'e2'] }]);
    expect(planAcknowledged(pending, 0, 'sess_a')).toEqual([]);
  });

  it('acks entries that arrived under a replaced session without naming a session', () => {
    const pending = [p('old1', 1, 'sess_old'), p('new1', 3, 'sess_new')];
    expect(planAcknowledged(pending, 5, 'sess_new')).toEqual([
      { session: 'sess_new', ids: ['new1'] },
      { session: null, ids: ['old1'] },
    ]);
  });

  it('on the principal leg never names a session', () => {
    expect(planAcknowledged([p('e1', 1, null), p('e2', 2, null)], 2, null)).toEqual([{ session: null, ids: ['e1', 'e2'] }]);
  });

  it('an entry still only spooled (delivered not yet confirmed) is acknowledged too once printed', () => {
    expect(planAcknowledged([p('e1', 1, 'sess_a', 'spooled')], 1, 'sess_a')).toEqual([{ session: 'sess_a', ids: ['e1'] }]);
  });

  it('splits a long backlog into bounded requests', () => {
    const pending = Array.from({ length: ACK_CHUNK * 2 + 1 }, (_, i) => p(`e${i}`, i + 1, 'sess_a'));
    const plan = planAcknowledged(pending, pending.length, 'sess_a');
    expect(plan.map((b) => b.ids.length)).toEqual([ACK_CHUNK, ACK_CHUNK, 1]);
    expect(plan.flatMap((b) => b.ids)).toEqual(pending.map((x) => x.id));
  });
});

describe('planDelivered', () => {
  it('names only entries not yet confirmed delivered', () => {
    const pending = [p('e1', 1, 'sess_a', 'delivered'), p('e2', 2, 'sess_a', 'spooled'), p('e3', 3, 'sess_old', 'spooled')];
    expect(planDelivered(pending, 'sess_a')).toEqual([
      { session: 'sess_a', ids: ['e2'] },
      { session: null, ids: ['e3'] },
    ]);
  });
});
