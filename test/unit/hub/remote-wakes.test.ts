import { describe, expect, it } from 'vitest';
import { remoteWakes } from '../../../src/hub/server/postgres/listener.js';
import { notifyPayloads, parsePayload } from '../../../src/hub/server/postgres/wake-payload.js';

// Issue 14: mail committed on another instance wakes only the streams it can be for. The NOTIFY
// payload carries the agent's key (drains) and the mailbox's; only a payload of an earlier build
// (the agent's key alone) wakes every mailbox of the agent.

describe('wake-ups heard from another instance', () => {
  it('round-trips ids through a payload, and wakes the mailbox a send names, not the whole agent', () => {
    const [payload] = notifyPayloads('inst1', 1234, [
      ['mail', 'agt_a'],
      ['mail', 'agt_a#sess_1'],
      ['message', 'msg_1'],
    ]);
    const parsed = parsePayload(payload!)!;
    expect(parsed).toMatchObject({ instance: 'inst1', sentAt: 1234 });
    expect(remoteWakes(parsed.wakes)).toEqual([
      { topic: 'mail', key: 'agt_a', family: false },
      { topic: 'mail', key: 'agt_a#sess_1', family: false },
      { topic: 'message', key: 'msg_1', family: false },
    ]);
  });

  it('principal mail wakes the principal mailbox (every session of the agent may claim it), still not as a family', () => {
    expect(
      remoteWakes([
        ['mail', 'agt_a'],
        ['mail', 'agt_a#'],
      ]),
    ).toEqual([
      { topic: 'mail', key: 'agt_a', family: false },
      { topic: 'mail', key: 'agt_a#', family: false },
    ]);
  });

  it("an earlier build's payload (the agent's key alone) wakes every mailbox of that agent, and only of that one", () => {
    expect(
      remoteWakes([
        ['mail', 'agt_old'],
        ['mail', 'agt_b'],
        ['mail', 'agt_b#sess_2'],
        ['released', 'agt_c'],
      ]),
    ).toEqual([
      { topic: 'mail', key: 'agt_old', family: true },
      { topic: 'mail', key: 'agt_b', family: false },
      { topic: 'mail', key: 'agt_b#sess_2', family: false },
      { topic: 'released', key: 'agt_c', family: false },
    ]);
  });
});
