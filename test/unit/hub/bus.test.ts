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

describe('the Hub bus: hearing for a listener about to join (a stream connect whose statement reads its first page)', () => {
  it('records the keys emitted while it hears, with nobody listening on them, until stopped; a family and a re-check of everything count', () => {
    const bus = new Bus();
    const mine = mailboxKey('agt_a', 'sess_1');
    const h = bus.hear();
    bus.mail.emit(mailboxKey('agt_a', 'sess_2'));
    expect(h.mail.has(mine)).toBe(false);
    bus.mail.emit(mine);
    bus.released.emit('agt_b');
    expect(h.mail.has(mine)).toBe(true);
    expect(h.released.has('agt_b')).toBe(true);
    expect(h.released.has('agt_a')).toBe(false);
    h.stop();
    bus.released.emit('agt_a');
    expect(h.released.has('agt_a')).toBe(false);

    // What a Hub of an earlier build sends (the agent alone), and a listener's reconnect (everything).
    const family = bus.hear();
    bus.mail.emitFamily('agt_a');
    expect([family.mail.has(mine), family.mail.has(mailboxKey('agt_a', null)), family.mail.has(mailboxKey('agt_b', 'sess_3'))]).toEqual([true, true, false]);
    const all = bus.hear();
    bus.released.emitAll();
    expect([all.released.has('agt_z'), all.mail.has(mine)]).toEqual([true, false]);
    family.stop();
    all.stop();
  });
});
