import { describe, expect, it } from 'vitest';
import { MAX_TEXT_BYTES } from '../../../src/hub/contract/index.js';
import { hubCall } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { undoAfterEach, useHub } from '../../helpers/world.js';
import { agent, bridge, stopConsumers, type Agent } from './world.js';

// Issue 18 High 1: a text of 65,536 × U+0001 is legal but JSON-escapes to ~393 KB. With 86 of
// them pending, the Hub's first `entries` event (100 deliveries) and a poll drain were larger
// than the client accepts: every later message stuck until its TTL and the bridge printed
// nothing. The Hub pages by bytes now (always one entry), the client accepts any page the
// contract allows: all 101 print, in order, over SSE and over long-poll.

const POISON = 100;
const poison = (i: number): string => `poison ${i}:`.padEnd(MAX_TEXT_BYTES, '\u0001');

describe('100 maximal-escape messages, then a normal one', () => {
  // The default hold and page size: what a deployment runs. Leases may be short for the test.
  const world = useHub({ args: ['--lease-min-seconds', '1'] });
  const keep = undoAfterEach(async (a: Agent) => {
    await stopConsumers(a);
    a.temp.cleanup();
  });

  for (const transport of ['sse', 'poll'] as const) {
    it(`oh-hai bridge --transport ${transport} prints all 101 in order`, async () => {
      const { hub } = world;
      const me = keep(await agent(hub));
      const sender = await hub.mintAgent('poisoner');
      // Queued at the principal address before the bridge exists: its session claims them on connect.
      for (let i = 0; i < POISON; i++) {
        const r = await hubCall(hub, 'POST', '/v1/messages', { token: sender.token, body: { to: `agent:${me.id}`, intent: 'notify', text: poison(i) } });
        expect(r.status, r.text).toBe(202);
      }
      const normal = await hubCall(hub, 'POST', '/v1/messages', {
        token: sender.token,
        body: { to: `agent:${me.id}`, intent: 'notify', text: 'the normal one' },
      });
      expect(normal.status, normal.text).toBe(202);

      // Each run prints what is waiting and exits; run until all 101 are out.
      const printed: string[] = [];
      await waitFor(
        async () => {
          const r = await bridge(me, 'poison', ['--transport', transport, ...(transport === 'poll' ? ['--interval', '0.2'] : []), '--wait', '10']);
          expect(r.code, r.stderr).toBe(0);
          printed.push(...r.stdout.split('\n').filter((l) => l !== ''));
          return printed.length >= POISON + 1;
        },
        { what: `${POISON + 1} records printed over ${transport}`, timeoutMs: 240_000, intervalMs: 0 },
      );
      const order = printed.map((l) => /"(poison \d+):|"(the normal one)"/.exec(l)?.slice(1).find(Boolean) ?? l.slice(0, 80));
      expect(order).toEqual([...Array.from({ length: POISON }, (_, i) => `poison ${i}`), 'the normal one']);
      // The escape is the bridge's: every U+0001 reached the line, none as a raw control byte.
      expect(printed[0]).not.toContain('\u0001');
      expect(printed[0]!.length).toBeGreaterThan(MAX_TEXT_BYTES);
    }, 300_000);
  }
});
