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

describe('the Hub bus: hearing costs an emit nothing per hearer', () => {
  /** A small seeded generator: the same sequence every run. */
  const random = (seed: number) => () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;

  it('answers every open window exactly and never misses in a closed one, against a model that collects every key', () => {
    const bus = new Bus();
    const next = random(7);
    const keys = ['agt_a', 'agt_a#s1', 'agt_a#', 'agt_b#s2', 'agt_b'];
    const pick = () => keys[Math.floor(next() * keys.length)]!;
    // The model: what the hearers used to do, every key emitted while each heard.
    const windows: Array<{ h: ReturnType<Bus['hear']>; seen: Set<string>; open: boolean; all: boolean }> = [];
    for (let step = 0; step < 2000; step++) {
      const r = next();
      if (r < 0.1) windows.push({ h: bus.hear(), seen: new Set(), open: true, all: false });
      else if (r < 0.18) {
        const w = windows[Math.floor(next() * windows.length)];
        if (w) {
          w.h.stop();
          w.open = false;
        }
      } else if (r < 0.2) {
        bus.mail.emitAll();
        for (const w of windows) if (w.open) w.all = true;
      } else if (r < 0.3) {
        const head = next() < 0.5 ? 'agt_a' : 'agt_b';
        bus.mail.emitFamily(head);
        for (const w of windows) if (w.open) for (const k of keys) if (k === head || k.startsWith(`${head}#`)) w.seen.add(k);
      } else {
        const k = pick();
        bus.mail.emit(k);
        for (const w of windows) if (w.open) w.seen.add(k);
      }
      for (let n = 0; n < 4 && windows.length > 0; n++) {
        const w = windows[Math.floor(next() * windows.length)]!;
        const k = pick();
        const model = w.all || w.seen.has(k);
        if (w.open) expect(w.h.mail.has(k)).toBe(model);
        else if (model) expect(w.h.mail.has(k)).toBe(true);
      }
    }
  });

  /**
   * The insertions into any Set or Map while `run` runs: the work an emit does for its hearers,
   * counted rather than timed (a time limit fails on a loaded machine and passes on a fast one).
   */
  const insertions = (run: () => void): number => {
    const { add } = Set.prototype;
    const { set } = Map.prototype;
    let n = 0;
    Set.prototype.add = function (this: Set<unknown>, value: unknown) {
      n += 1;
      return add.call(this, value);
    };
    Map.prototype.set = function (this: Map<unknown, unknown>, key: unknown, value: unknown) {
      n += 1;
      return set.call(this, key, value);
    };
    try {
      run();
    } finally {
      Set.prototype.add = add;
      Map.prototype.set = set;
    }
    return n;
  };

  it('inserts as much per emit with 1,000 connects hearing as with one (each hearer collected every key: 10^7 insertions here)', () => {
    const EMITS = 10_000;
    const emitWhileHearing = (hearers: number) => {
      const bus = new Bus();
      const hearing = Array.from({ length: hearers }, () => bus.hear());
      const n = insertions(() => {
        for (let i = 0; i < EMITS; i++) bus.mail.emit(mailboxKey(`agt_${i % 100}`, `sess_${i}`));
      });
      expect(hearing[0]!.mail.has(mailboxKey('agt_3', 'sess_3'))).toBe(true);
      expect(hearing[hearers - 1]!.mail.has(mailboxKey('agt_3', 'sess_4'))).toBe(false);
      for (const h of hearing) h.stop();
      return n;
    };
    expect(emitWhileHearing(1000)).toBe(emitWhileHearing(1));
  });

  it('answers yes, never a miss, for a window older than what it forgot (more keys than it remembers)', () => {
    const bus = new Bus();
    const old = bus.hear();
    for (let i = 0; i < 70_000; i++) bus.mail.emit(mailboxKey('agt_a', `sess_${i}`));
    expect(old.mail.has(mailboxKey('agt_a', 'sess_0'))).toBe(true);
    expect(old.mail.has(mailboxKey('agt_z', 'never'))).toBe(true);
    const young = bus.hear();
    bus.mail.emit(mailboxKey('agt_b', 's'));
    expect([young.mail.has(mailboxKey('agt_b', 's')), young.mail.has(mailboxKey('agt_z', 'never'))]).toEqual([true, false]);
    old.stop();
    young.stop();
  });
});

describe('the Hub bus: listeners added and removed without a closure (a held stream listens on three keys)', () => {
  it('wakes a listener on each key it was added on until removed there; a key whose last listener left leaves its family', () => {
    const bus = new Bus();
    const woken: string[] = [];
    const own = mailboxKey('agt_a', 'sess_1');
    const principal = mailboxKey('agt_a', null);
    const wake = () => woken.push('wake');
    const other = () => woken.push('other');
    bus.mail.add(own, wake);
    bus.mail.add(principal, wake);
    bus.mail.add(principal, other);
    // Added twice on one key: woken once, as a Set kept it.
    bus.mail.add(own, wake);
    bus.mail.emit(own);
    bus.deliver();
    expect(woken).toEqual(['wake']);

    bus.mail.remove(principal, wake);
    woken.length = 0;
    bus.mail.emit(principal);
    bus.deliver();
    expect(woken).toEqual(['other']);
    expect(bus.mail.listening(principal)).toBe(true);

    // Removed while its key's wake-up is being delivered: the listeners taken for it still run.
    bus.mail.add(principal, wake);
    bus.mail.remove(principal, other);
    bus.mail.add(principal, () => bus.mail.remove(principal, wake));
    woken.length = 0;
    bus.mail.emit(principal);
    bus.deliver();
    expect(woken).toEqual(['wake']);

    bus.mail.remove(own, wake);
    // Removing what is not there changes nothing.
    bus.mail.remove(own, wake);
    expect(bus.mail.listening(own)).toBe(false);
    woken.length = 0;
    bus.mail.emitFamily('agt_a');
    bus.deliver();
    expect(woken).toEqual([]);
  });
});
