import { afterEach, describe, expect, it } from 'vitest';
import { deliverTampered, expectRefused } from './tamper.js';
import { teardown } from './world.js';

/**
 * MA2H §7 and the product doc's "What the bridge verifies": an entry with exactly its kind's
 * fields, addressed to this agent and this session. The peer Hub signs each bad entry
 * correctly, so only the shape and the address can give it away: exit 12, nothing printed,
 * nothing acked.
 */

afterEach(teardown);

describe('the bridge refuses a validly signed entry the text calls invalid', () => {
  it('an unknown field', async () => {
    expectRefused(await deliverTampered(() => ({ reshapeEntry: (e) => ({ ...e, priority: 'high' }) })));
  });

  it('a field of another kind (intent on a directive)', async () => {
    expectRefused(await deliverTampered(() => ({ reshapeEntry: (e) => ({ ...e, intent: 'notify' }) })));
  });

  it("a missing field of its kind (a directive's text)", async () => {
    expectRefused(
      await deliverTampered(() => ({
        reshapeEntry: (e) => Object.fromEntries(Object.entries(e).filter(([k]) => k !== 'text')),
      })),
    );
  });

  it('a bounced receipt without prior', async () => {
    expectRefused(
      await deliverTampered(() => ({
        reshapeEntry: (e) => ({ id: e.id!, kind: 'receipt', from: e.to!, to: e.to!, created_at: e.created_at!, message_id: 'M:gone', status: 'bounced' }),
      })),
    );
  });

  // Bytes, not characters: 32,769 × "é" is 65,538 UTF-8 bytes but only 32,769 UTF-16 units.
  // (Split-chunk framing is off here only to keep a 64 KiB event quick.)
  it('text over 65,536 UTF-8 bytes', async () => {
    expectRefused(await deliverTampered(() => ({ reshapeEntry: (e) => ({ ...e, text: 'é'.repeat(32_769) }) }), { sse: { splitChunks: false } }));
  });

  it('(control) text of exactly 65,536 UTF-8 bytes is valid and printed', async () => {
    const t = await deliverTampered(() => ({ reshapeEntry: (e) => ({ ...e, text: 'é'.repeat(32_768) }) }), { sse: { splitChunks: false } });
    expect(t.run!.code, t.run!.stderr).toBe(0);
    expect(t.run!.stdout).toContain('é'.repeat(32_768));
  });

  it('created_at that is not an instant', async () => {
    expectRefused(await deliverTampered(() => ({ reshapeEntry: (e) => ({ ...e, created_at: 'yesterday' }) })));
  });

  it('addressed to another session of this agent', async () => {
    expectRefused(await deliverTampered((_hub, a) => ({ reshapeEntry: (e) => ({ ...e, to: `agent:${a.id}#S~another-run` }) })));
  });

  it('addressed to another agent', async () => {
    expectRefused(await deliverTampered((hub) => ({ reshapeEntry: (e) => ({ ...e, to: `agent:${hub.addAgent({ label: 'someone else' }).id}` }) })));
  });
});
