import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyDelivery, type VerifyCheck } from '../../../src/consumer/verify.js';
import { fuzzParameters } from '../../helpers/fuzz.js';
import { arrived, delivery, openIngest, sessionContext } from '../consumer/deliveries.js';

/**
 * Entry verification under mutation: every field of a delivery mutated, dropped,
 * duplicated under another name, or retyped. A delivery is either accepted unchanged (the
 * entry that would be spooled deep-equals the one received) or rejected naming one of the
 * documented checks — and a batch holding a rejected delivery spools nothing.
 */

const CHECKS: readonly VerifyCheck[] = ['delivery', 'signature_syntax', 'replay_window', 'jti_replayed', 'entry_shape', 'addressing'];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const json = fc.jsonValue({ maxDepth: 2 });
/** A value of another type, or a near-miss of the same type. */
const retype = fc.oneof(
  json,
  fc.constantFrom(
    '',
    ' ',
    'ent_x',
    'agent:agt_me',
    'agent:agt_other#sess_a',
    'agent:agt_me#sess_old',
    'human:acct_1',
    'directive',
    'message',
    'ask',
    '2026-09-18T14:18:00Z',
    'not a date',
    '\u0000',
    '\u202e',
  ),
  fc.string({ maxLength: 40 }),
);

type Mutation = { op: 'drop' | 'set' | 'copy' | 'add'; path: 'entry' | 'delivery'; key: string; value: unknown; other: string };

const ENTRY_KEYS = ['id', 'kind', 'from', 'to', 'created_at', 'text', 'thread_id', 'message_id', 'intent', 'x_unknown'];
const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('drop', 'set', 'copy', 'add'),
  path: fc.constantFrom('entry', 'entry', 'entry', 'delivery'),
  key: fc.constantFrom(...ENTRY_KEYS, 'signature', 'entry'),
  value: retype,
  other: fc.constantFrom(...ENTRY_KEYS),
});

const clone = <T>(x: T): T => structuredClone(x);

function mutate(d: { entry: Record<string, unknown>; signature: string }, ms: Mutation[]): unknown {
  const out: Record<string, unknown> = clone(d) as unknown as Record<string, unknown>;
  for (const m of ms) {
    const target =
      m.path === 'entry' && typeof out.entry === 'object' && out.entry !== null && !Array.isArray(out.entry) ? (out.entry as Record<string, unknown>) : out;
    if (m.op === 'drop') delete target[m.key];
    else if (m.op === 'set') target[m.key] = m.value;
    else if (m.op === 'copy') target[m.other] = clone(target[m.key]);
    else target[`${m.key}_dup`] = m.value;
  }
  return out;
}

describe('entry verification (fuzzed)', () => {
  it('a mutated delivery is accepted unchanged or rejected with its named check', () => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), (ms) => {
        const raw = mutate(delivery('ent_fuzz'), ms);
        const before = clone(raw);
        const v = verifyDelivery(raw, sessionContext(new Set<string>()));
        expect(raw, 'verification never alters what it was given').toEqual(before);
        if (v.verdict === 'reject') {
          expect(CHECKS).toContain(v.check);
          expect(v.message).toMatch(new RegExp(`^entry .* failed verification \\(${v.check}\\): .+`));
        } else {
          expect(v.entry).toEqual((raw as { entry: unknown }).entry);
          expect(v.signature).toBe((raw as { signature: unknown }).signature);
        }
      }),
      fuzzParameters(0x7e21, 500),
    );
  });

  it('a batch with a rejected delivery anywhere in it spools nothing; an accepted batch spools every entry unchanged', () => {
    fc.assert(
      fc.property(fc.array(mutation, { maxLength: 2 }), fc.nat({ max: 3 }), fc.integer({ min: 1, max: 4 }), fc.boolean(), (ms, at, size, duplicate) => {
        const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-fuzz-verify-'));
        dirs.push(dir);
        const world = openIngest(dir);
        const batch: unknown[] = Array.from({ length: size }, (_, i) => delivery(`ent_${i}`));
        batch.splice(Math.min(at, batch.length), 0, mutate(delivery('ent_target'), ms));
        // Duplicated: the same delivery (same jti) twice in one batch is a replay.
        if (duplicate) batch.push(clone(batch[0]));
        const verdicts = batch.map((raw) => verifyDelivery(raw, sessionContext(new Set<string>())));
        const r = world.ingest.run(batch, arrived, world.ctx());
        const spooled = world.spool.readAfter(0).map((it) => (it.record.type === 'entry' ? it.record.entry : null));
        world.close();
        if (duplicate || verdicts.some((v) => v.verdict === 'reject')) {
          expect(r.ok).toBe(false);
          expect(spooled).toEqual([]);
          let text = '';
          try {
            text = readFileSync(path.join(dir, 'bridge.ndjson'), 'utf8');
          } catch {
            text = '';
          }
          expect(text).toBe('');
        } else {
          expect(r.ok).toBe(true);
          const ids = new Set<string>();
          const expected = batch.map((d) => (d as { entry: { id: string } }).entry).filter((e) => !ids.has(e.id) && ids.add(e.id));
          expect(spooled).toEqual(expected);
        }
      }),
      fuzzParameters(0x7e22, 150),
    );
  });
});
