import { describe, expect, it } from 'vitest';
import { Bus } from '../../../src/hub/server/bus.js';
import { mailboxKey } from '../../../src/hub/server/entries.js';

describe('the Hub bus: mail wakes by agent and by mailbox', () => {
  it("wakes a mailbox's listeners only for its key, and every mailbox of an agent for the agent's family", () => {
    const bus = new Bus();
    const woken: string[] = [];
    const listen = (key: string) => bus.mail.on(key, () => woken.push(key));
    const offA1 = listen(mailboxKey('agt_a', 'sess_1'));
    listen(mailboxKey('agt_a', 'sess_2'));
    listen(mailboxKey('agt_a', null));
    listen(mailboxKey('agt_b', 'sess_3'));
    listen('agt_a');

    bus.mail.emit(mailboxKey('agt_a', 'sess_1'));
    bus.deliver();
    expect(woken).toEqual(['agt_a#sess_1']);

    // What a Hub of an earlier build sends on a shared store: the agent alone.
    woken.length = 0;
    bus.mail.emitFamily('agt_a');
    bus.deliver();
    expect(woken.sort()).toEqual(['agt_a', 'agt_a#', 'agt_a#sess_1', 'agt_a#sess_2']);

    // A key nobody listens on any more leaves its family.
    offA1();
    woken.length = 0;
    bus.mail.emitFamily('agt_a');
    bus.deliver();
    expect(woken.sort()).toEqual(['agt_a', 'agt_a#', 'agt_a#sess_2']);
  });
});
