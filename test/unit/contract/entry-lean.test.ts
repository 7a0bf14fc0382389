import { describe, expect, it } from 'vitest';
import { validateEntry } from '../../../src/hub/contract/index.js';

// validateEntry takes a lean path for the usual directive, message and response (one test a
// field) and the full one for the rest: both must give the full check's verdicts. Each case
// below sits just outside the lean path's shape, on either side of validity.
const directive = {
  id: 'ent_de0fa73b23cd2a9ffe05af36',
  from: 'human:acct_237f68705bc7e0f36556daa9',
  to: 'agent:agt_1ffebaa2c19dc58edc733194#sess_01a621805e330370458cbc38',
  created_at: '2026-12-02T16:09:48.941Z',
  thread_id: 'msg_eecb80b806c37b181e401490',
  kind: 'directive',
  text: 'hello',
};
const message = { ...directive, kind: 'message', message_id: 'msg_1', intent: 'ask', in_reply_to: 'msg_0' };
const response = { ...directive, kind: 'response', message_id: 'msg_2', in_reply_to: 'msg_1' };

const refused: [string, object][] = [
  ['an unknown field', { ...directive, extra: 1 }],
  ["another kind's field", { ...directive, message_id: 'msg_1' }],
  ['a day February does not have', { ...directive, created_at: '2025-02-29T00:00:00Z' }],
  ['day 31 of a 30-day month', { ...directive, created_at: '2026-04-31T00:00:00Z' }],
  ['hour 24', { ...directive, created_at: '2026-12-02T24:00:00Z' }],
  ['no zone', { ...directive, created_at: '2026-12-02T16:09:48' }],
  ["'#' in an id", { ...directive, id: 'ent_#1' }],
  ['a space in the thread id', { ...directive, thread_id: 'msg 1' }],
  ['a C1 control in the sender', { ...directive, from: 'human:acct\u0085' }],
  ['an empty session in the address', { ...directive, to: 'agent:agt_1#' }],
  ['a principal as the address', { ...directive, to: 'human:acct_1' }],
  ['an id of 129 bytes', { ...directive, id: 'e'.repeat(129) }],
  ['a text of 65,537 bytes', { ...directive, text: 'x'.repeat(65_537) }],
  ['a text of 21,846 three-byte characters', { ...directive, text: '€'.repeat(21_846) }],
  ['a text that is not a string', { ...directive, text: 5 }],
  ['a number as the id', { ...directive, id: 5 }],
  ['a message without an intent', { ...message, intent: undefined }],
  ['a message with an unknown intent', { ...message, intent: 'shout' }],
  ['a message without a message id', { ...message, message_id: undefined }],
  ["a message's in_reply_to with '#'", { ...message, in_reply_to: 'msg#0' }],
  ['a response without in_reply_to', { ...response, in_reply_to: undefined }],
];

const accepted: [string, object][] = [
  ['the usual directive', directive],
  ['a directive without a thread', { ...directive, thread_id: undefined }],
  ['a message', message],
  ['a message without in_reply_to', { ...message, in_reply_to: undefined }],
  ['a response', response],
  ['February 29 of a leap year', { ...directive, created_at: '2028-02-29T00:00:00Z' }],
  ['day 31 of a 31-day month', { ...directive, created_at: '2026-12-31T23:59:59.123456789Z' }],
  ['an offset zone', { ...directive, created_at: '2026-12-02T16:09:48+02:00' }],
  ['an id of 128 bytes', { ...directive, id: 'e'.repeat(128) }],
  ['an agent id of 512 bytes', { ...directive, to: `agent:${'a'.repeat(512)}#sess_1` }],
  ['a principal mailbox', { ...directive, to: 'agent:agt_1' }],
  ['an agent as the sender', { ...directive, from: 'agent:agt_2#sess_2' }],
  ['a text of 65,536 bytes', { ...directive, text: 'x'.repeat(65_536) }],
  ['a receipt', { ...directive, kind: 'receipt', message_id: 'msg_1', status: 'bounced', prior: 'queued', reason: 'session_lapsed', text: undefined }],
];

// Spreads above leave `undefined` where a field is meant to be absent: JSON has no undefined.
const wire = (x: object): unknown => JSON.parse(JSON.stringify(x));

describe('validateEntry: the lean path gives the full check’s verdicts', () => {
  it.each(refused)('refuses %s', (_why, x) => {
    const r = validateEntry(wire(x));
    expect(r.ok).toBe(false);
  });

  it.each(accepted)('accepts %s, field for field', (_why, x) => {
    const entry = wire(x);
    const r = validateEntry(entry);
    expect(r.ok, r.ok ? '' : r.reason).toBe(true);
    if (r.ok) expect(r.value).toEqual(entry);
  });
});
