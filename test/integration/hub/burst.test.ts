import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { agent, bridge, registered, spooledEntries, stateDirOf, stopConsumers } from '../bridge/world.js';

// A stream reads its mailbox by keyset (seq > the last it pushed). Sends to one agent that
// commit out of seq order (PostgreSQL: several units at once on the pool) would let a stream
// woken by the later one move past the earlier, which then waits for the hold bound. The hold
// here is far above the deadline, so every entry arriving in time was pushed.
const HOLD_SECONDS = 90;
const DEADLINE_MS = 45_000;

describe('a burst of concurrent sends to one session', () => {
  let hub: TestHub;
  beforeAll(
    async () =>
      void (hub = await startHub({ args: ['--stream-max-hold-seconds', String(HOLD_SECONDS), '--lease-min-seconds', '1', '--keepalive-seconds', '0.5'] })),
  );
  afterAll(() => hub?.dispose());

  it('reaches the bridge holding its stream: every entry pushed once, none left for the hold bound', async () => {
    const ag = await agent(hub);
    try {
      const dir = stateDirOf(ag, hub, 'burst');
      expect((await bridge(ag, 'burst', ['--wait', '0'])).code).toBe(0);
      const sess = await registered(dir);
      const sender = await hub.mintAgent('burst-sender');
      const N = 200;
      const WIDE = 20;
      const accepted: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: WIDE }, async () => {
          while (next < N) {
            const i = next++;
            const r = await hubCall(hub, 'POST', '/v1/messages', {
              token: sender.token,
              body: { to: `agent:${ag.id}#${sess}`, intent: 'notify', text: `burst ${i}` },
            });
            expect(r.status, r.text).toBe(202);
            accepted.push(r.body.message.id as string);
          }
        }),
      );
      const spooled = (): string[] => spooledEntries(dir).map((e) => e.messageId);
      await waitFor(
        () => {
          const n = spooled().length;
          if (n < N) throw new Error(`${n} of ${N} spooled`);
          return true;
        },
        { timeoutMs: DEADLINE_MS, what: `${N} entries pushed within ${DEADLINE_MS} ms (the hold is ${HOLD_SECONDS} s)` },
      );
      const ids = spooled();
      expect(ids.length, 'an entry spooled twice').toBe(N);
      expect([...ids].sort()).toEqual([...accepted].sort());
    } finally {
      await stopConsumers(ag);
      ag.temp.cleanup();
    }
  });
});
