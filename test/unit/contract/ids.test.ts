import { describe, expect, it } from 'vitest';
import { parseAddress, validateAgentId, validateId, validateSender } from '../../../src/hub/contract/ids.js';

/** The class ids were checked with before: MA2H §0's '#', whitespace and Cc, spelled with a Unicode property. */
const BEFORE = /[#\s\p{Cc}]/u;

describe('ids: forbidden characters', () => {
  it('every code point is refused exactly when the \\p{Cc} form matched it, and named the same way', () => {
    const differ: string[] = [];
    let refused = 0;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const id = `a${String.fromCodePoint(cp)}b`;
      const r = validateId(id, 'id');
      const named = cp === 0x23 ? "'#'" : `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
      if (r.ok !== !BEFORE.test(id) || (!r.ok && !r.reason.includes(`contains ${named};`))) differ.push(`U+${cp.toString(16)}`);
      if (!r.ok) refused += 1;
    }
    expect(differ).toEqual([]);
    // '#', the 65 Cc and the 20 \s characters outside Cc (U+0020, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF)
    expect(refused).toBe(1 + 65 + 20);
  });

  it('lone surrogates are allowed, as before', () => {
    for (const unit of [0xd800, 0xdbff, 0xdc00, 0xdfff]) {
      const id = `a${String.fromCharCode(unit)}b`;
      expect(BEFORE.test(id)).toBe(false);
      expect(validateId(id, 'id').ok).toBe(true);
    }
  });

  it('lengths count UTF-8 bytes: at the limit, one over, and in 3- and 4-byte characters', () => {
    expect(validateId('x'.repeat(128), 'id').ok).toBe(true);
    expect(validateId('x'.repeat(129), 'id')).toEqual({ ok: false, reason: 'id is 129 bytes; the limit is 128' });
    expect(validateId('€'.repeat(42) + 'xx', 'id').ok).toBe(true);
    expect(validateId('€'.repeat(43), 'id')).toEqual({ ok: false, reason: 'id is 129 bytes; the limit is 128' });
    expect(validateId('😀'.repeat(32), 'id').ok).toBe(true);
    expect(validateId('😀'.repeat(32) + 'x', 'id')).toEqual({ ok: false, reason: 'id is 129 bytes; the limit is 128' });
    expect(validateAgentId('x'.repeat(513)).ok).toBe(false);
  });

  it('messages name the field, the whole address and the fault', () => {
    expect(validateId('', "field 'id'")).toEqual({ ok: false, reason: "field 'id' is empty" });
    expect(validateId(7, "field 'id'")).toEqual({ ok: false, reason: "field 'id' must be a string, got number 7" });
    expect(validateId('a#b', "field 'id'")).toEqual({
      ok: false,
      reason: `field 'id' "a#b" contains '#'; ids may not contain '#', whitespace or control characters`,
    });
    expect(parseAddress('agent:a b#s', "field 'to'")).toEqual({
      ok: false,
      reason: `agent id in field 'to' "agent:a b#s" "a b" contains U+0020; ids may not contain '#', whitespace or control characters`,
    });
    expect(parseAddress('agent:a#', "field 'to'")).toEqual({ ok: false, reason: `session id in field 'to' "agent:a#" is empty` });
    expect(parseAddress('agent:a#s')).toEqual({ ok: true, value: { agentId: 'a', sessionId: 's' } });
    expect(parseAddress('agent:a')).toEqual({ ok: true, value: { agentId: 'a', sessionId: null } });
    expect(validateSender('human:')).toEqual({ ok: false, reason: `account id in from "human:" is empty` });
    expect(validateSender('human:acc_1')).toEqual({ ok: true, value: 'human:acc_1' });
    expect(validateSender('agent:a\tb', "field 'from'")).toEqual({
      ok: false,
      reason: `agent id in field 'from' "agent:a\tb" "a\tb" contains U+0009; ids may not contain '#', whitespace or control characters (or human:<account_id>)`,
    });
  });
});
