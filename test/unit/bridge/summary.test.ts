import { describe, expect, it } from 'vitest';
import type { Entry } from '../../../src/hub/contract/types.js';
import { entrySummary, quoteText, transitionSummary, UNTRUSTED } from '../../../src/reader/summary.js';

const base = { id: 'ent_1', from: 'agent:agt_peer#sess_p', to: 'agent:agt_me#sess_m', created_at: '2026-09-18T14:33:07.000Z' };
const line = (entry: Entry, possiblyBounced: { session: string } | null = null) => entrySummary({ seq: 7, entry, possiblyBounced });

describe('summary lines', () => {
  it('an ask names kind, sender, intent, the reply command and marks its text untrusted', () => {
    const s = line({ ...base, kind: 'message', message_id: 'msg_9', intent: 'ask', text: 'deploy?' });
    expect(s).toBe(`[mail 7] ask from agent:agt_peer#sess_p (msg_9) · reply: oh-hai reply msg_9 · ${UNTRUSTED}: "deploy?"\n`);
  });

  it('a notify says no reply is expected; a task gets the reply command', () => {
    expect(line({ ...base, kind: 'message', message_id: 'msg_1', intent: 'notify', text: 'fyi' })).toContain('notify: no reply expected');
    expect(line({ ...base, kind: 'message', message_id: 'msg_2', intent: 'task', text: 'do', in_reply_to: 'msg_0', thread_id: 'thr_1' })).toBe(
      `[mail 7] task from agent:agt_peer#sess_p (msg_2) in reply to msg_0 · thread thr_1 · reply: oh-hai reply msg_2 · ${UNTRUSTED}: "do"\n`,
    );
  });

  it('directives, responses and receipts each name their ids', () => {
    expect(line({ ...base, from: 'human:acct_1', kind: 'directive', text: 'stop' })).toBe(
      `[mail 7] directive from human:acct_1 (ent_1) · no reply channel · ${UNTRUSTED}: "stop"\n`,
    );
    expect(line({ ...base, kind: 'response', message_id: 'msg_r', in_reply_to: 'msg_a', text: 'yes' })).toBe(
      `[mail 7] response from agent:agt_peer#sess_p to your ask msg_a (msg_r) · ${UNTRUSTED}: "yes"\n`,
    );
    expect(line({ ...base, kind: 'receipt', message_id: 'msg_s', status: 'bounced', prior: 'delivered', reason: 'session_lapsed' })).toBe(
      '[mail 7] receipt: your message msg_s to agent:agt_peer#sess_p bounced after delivered (session_lapsed)\n',
    );
  });

  it('keeps every record on one line: control characters, separators and bidi overrides are escaped', () => {
    const text = 'a\nb\r\tc\u0000d\u007fe\u0085f\u2028g\u2029h\u202ei\u2066j"k\\l';
    const s = line({ ...base, kind: 'directive', text });
    expect(s.endsWith('\n')).toBe(true);
    expect(s.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    expect(s).toContain(String.raw`"a\nb\r\tc\u0000d\u007fe\u0085f\u2028g\u2029h\u202ei\u2066j\"k\\l"`);
    // The quoted text round-trips through JSON: nothing was lost, only escaped.
    expect(JSON.parse(quoteText(text))).toBe(text);
  });

  it('an 8 KB text stays one line', () => {
    const s = line({ ...base, kind: 'directive', text: 'x\n'.repeat(4096) });
    expect(s.split('\n')).toHaveLength(2);
  });

  it('an unsafe sender is quoted rather than printed raw', () => {
    const s = line({ ...base, from: 'agent:a b', kind: 'directive', text: 't' });
    expect(s).toContain('from "agent:a b"');
  });

  it('a record from a replaced session is printed as possibly bounced, never as fresh mail', () => {
    const s = line({ ...base, kind: 'message', message_id: 'msg_9', intent: 'ask', text: 'q' }, { session: 'sess_old' });
    expect(s).toMatch(/^\[mail 7\] POSSIBLY BOUNCED — arrived under sess_old, since replaced;.*do not treat it as fresh mail · ask from/);
  });

  it('an address change is its own line', () => {
    expect(transitionSummary({ seq: 8, from_address: 'agent:a#sess_1', to_address: 'agent:a#sess_2', reason: 'session_lapsed' })).toBe(
      '[mail 8] address changed (session_lapsed): agent:a#sess_1 → agent:a#sess_2 · mail to the old address bounces; peers need the new one\n',
    );
  });

  it('an address change after a kill-switch lift says the stop was lifted: only then does the Hub let the connection register', () => {
    expect(transitionSummary({ seq: 2, from_address: 'agent:a#sess_1', to_address: 'agent:a#sess_2', reason: 'session_closed_by_operator' })).toBe(
      '[mail 2] address changed (session_closed_by_operator): agent:a#sess_1 → agent:a#sess_2 · a human closed the old session (the operator kill-switch) ' +
        'and has since lifted the stop, so the connection registered this new one · mail to the old address bounces; peers need the new one\n',
    );
  });

  it("puts a sender's label from the directory cache beside its address, escaped like the address; ids alone when unknown", () => {
    const labels = new Map([
      ['agt_peer', 'reviewer'],
      ['agt_odd', 'code\nreviewer'],
    ]);
    const ask = { ...base, kind: 'message' as const, message_id: 'msg_9', intent: 'ask' as const, text: 'deploy?' };
    expect(entrySummary({ seq: 7, entry: ask, possiblyBounced: null }, labels)).toBe(
      `[mail 7] ask from agent:agt_peer#sess_p (reviewer) (msg_9) · reply: oh-hai reply msg_9 · ${UNTRUSTED}: "deploy?"\n`,
    );
    const of = (entry: Entry) => entrySummary({ seq: 7, entry, possiblyBounced: null }, labels);
    expect(of({ ...base, kind: 'response', message_id: 'msg_r', in_reply_to: 'msg_a', text: 'yes' })).toContain(
      'response from agent:agt_peer#sess_p (reviewer) to your ask',
    );
    expect(of({ ...base, kind: 'receipt', message_id: 'msg_s', status: 'acknowledged' })).toBe(
      '[mail 7] receipt: your message msg_s to agent:agt_peer#sess_p (reviewer) acknowledged\n',
    );
    expect(of({ ...base, from: 'agent:agt_odd', kind: 'message', message_id: 'msg_1', intent: 'notify', text: 't' })).toContain(
      'notify from agent:agt_odd ("code\\nreviewer") (msg_1)',
    );
    // Not in the cache, or not an agent: the address alone, as without a cache.
    expect(of({ ...base, from: 'agent:agt_new', kind: 'message', message_id: 'msg_1', intent: 'notify', text: 't' })).toContain(
      'notify from agent:agt_new (msg_1)',
    );
    expect(of({ ...base, from: 'human:acct_1', kind: 'directive', text: 'stop' })).toContain('directive from human:acct_1 (ent_1)');
    expect(line(ask)).toBe(entrySummary({ seq: 7, entry: ask, possiblyBounced: null }, new Map()));
  });
});
