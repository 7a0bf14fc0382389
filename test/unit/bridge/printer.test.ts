import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Collected, Printer } from '../../../src/reader/printer.js';
import type { Output } from '../../../src/util/output.js';
import { STATE_FILES, openStateDir, readCursor, type NewSpoolRecord, type StateDir } from '../../../src/spool/index.js';
import { fakeClock } from '../../../src/util/clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** stdout as the printer sees it: each write is taken (or fails) when its callback runs, and what was taken is kept. */
class Stdout implements Output {
  taken: string[] = [];
  /** Fail the write of this many-th record (1-based), and every one after it. */
  failFrom = Infinity;
  /** The cursor on disk when each write was handed over, before its callback. */
  cursorAtWrite: number[] = [];

  constructor(private readonly dir: string) {}

  write(text: string, cb?: (err?: Error | null) => void): boolean {
    this.cursorAtWrite.push(readCursor(this.dir).seq);
    const n = this.cursorAtWrite.length;
    setImmediate(() => {
      if (n >= this.failFrom) {
        cb?.(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
        return;
      }
      this.taken.push(text);
      cb?.(null);
    });
    return true;
  }

  on(): this {
    return this;
  }
}

const SIG = 't=1,jti=abcdefghijklmnop,alg=hmac-sha256,v1=' + '0'.repeat(64);
const message = (id: string, text: string, to = 'agent:agt_me#sess_a') => ({
  id,
  kind: 'message' as const,
  from: 'agent:agt_peer#sess_peer',
  to,
  created_at: '2026-09-18T14:33:07.000Z',
  message_id: `msg_${id}`,
  intent: 'ask' as const,
  text,
});

function world(records: NewSpoolRecord[] = []) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-printer-'));
  dirs.push(dir);
  const opened = openStateDir(dir, { create: true, log: { clock: fakeClock(0), pid: 4242 } });
  if (!opened.ok) throw new Error(opened.reason);
  const stateDir: StateDir = opened.value;
  const spool = stateDir.openSpool(fakeClock(0));
  if (!spool.ok) throw new Error(spool.reason);
  spool.value.append(records);
  const out = new Stdout(dir);
  let stopAfter = Infinity;
  const printer = (raw = false) => new Printer(stateDir, out, raw, () => out.taken.length >= stopAfter);
  const append = (more: NewSpoolRecord[]) => spool.value.append(more);
  const log = () => {
    try {
      return readFileSync(path.join(dir, STATE_FILES.log), 'utf8');
    } catch {
      return '';
    }
  };
  return {
    dir,
    stateDir,
    out,
    printer,
    append,
    log,
    ends: () =>
      stateDir
        .spoolReader()
        .readAfter(0)
        .map((i) => i.end),
    stopAfter: (n: number) => (stopAfter = n),
  };
}

const entryRecord = (id: string, text = `text of ${id}`, session = 'sess_a'): NewSpoolRecord => ({
  type: 'entry',
  session,
  entry: message(id, text),
  signature: SIG,
});

describe('Printer', () => {
  it('prints every record after the cursor, moving the cursor past each only once stdout took it', async () => {
    const w = world([entryRecord('e1'), entryRecord('e2'), entryRecord('e3')]);
    const p = w.printer(true);
    expect(p.available()).not.toHaveLength(0);
    await p.printAvailable();
    expect(w.out.taken).toEqual(
      w.stateDir
        .spoolReader()
        .readAfter(0)
        .map((i) => i.line + '\n'),
    );
    // the cursor had not moved past a record when its write was handed to stdout
    expect(w.out.cursorAtWrite).toEqual([0, 1, 2]);
    expect(readCursor(w.dir)).toEqual({ seq: 3, offset: w.ends()[2] });
    expect(p.printed).toBe(3);
    expect(p.available()).toHaveLength(0);
    await p.printAvailable();
    expect(w.out.taken).toHaveLength(3);
  });

  it('continues from the cursor on disk, printing what was appended since', async () => {
    const w = world([entryRecord('e1'), entryRecord('e2')]);
    await w.printer(true).printAvailable();
    w.append([entryRecord('e3')]);
    const p = w.printer(true);
    expect(p.available()).not.toHaveLength(0);
    await p.printAvailable();
    expect(w.out.taken).toHaveLength(3);
    expect(p.printed).toBe(1);
    expect(readCursor(w.dir).seq).toBe(3);
  });

  it('a failed write rejects and leaves the cursor on the last record stdout took', async () => {
    const w = world([entryRecord('e1'), entryRecord('e2'), entryRecord('e3')]);
    w.out.failFrom = 2;
    const p = w.printer(true);
    await expect(p.printAvailable()).rejects.toThrow('write EPIPE');
    expect(readCursor(w.dir)).toEqual({ seq: 1, offset: w.ends()[0] });
    expect(p.printed).toBe(1);
  });

  it('a stop request lets the record in flight finish, and no more', async () => {
    const w = world([entryRecord('e1'), entryRecord('e2'), entryRecord('e3')]);
    w.stopAfter(2);
    const p = w.printer(true);
    await p.printAvailable();
    expect(w.out.taken).toHaveLength(2);
    expect(readCursor(w.dir).seq).toBe(2);
  });

  it('a cursor that does not match the spool is rewound and the rewind logged', async () => {
    const w = world([entryRecord('e1'), entryRecord('e2')]);
    w.stateDir.writeCursor({ seq: 2, offset: w.ends()[0]! });
    const p = w.printer(true);
    expect(w.log()).toContain(`reader: no record 2 ends at byte ${w.ends()[0]} of ${w.stateDir.path(STATE_FILES.spool)}; rewound to seq 2`);
    expect(p.available()).toHaveLength(0);
  });

  it('a matching cursor logs nothing', () => {
    const w = world([entryRecord('e1')]);
    w.stateDir.writeCursor({ seq: 1, offset: w.ends()[0]! });
    w.printer(true);
    expect(w.log()).toBe('');
  });

  it('summaries: one line per record, a transition as an address change, an unreadable entry pointing at --raw', async () => {
    const w = world([
      entryRecord('e1', 'hello'),
      {
        type: 'transition',
        event: 'address_changed',
        from_session: 'sess_a',
        to_session: 'sess_b',
        from_address: 'agent:agt_me#sess_a',
        to_address: 'agent:agt_me#sess_b',
        reason: 'session_lapsed',
      },
      { type: 'entry', session: 'sess_b', entry: { id: 'odd', kind: 'nonsense' } as { id: string }, signature: SIG },
    ]);
    await w.printer().printAvailable();
    expect(w.out.taken[0]).toMatch(
      /^\[mail 1\] POSSIBLY BOUNCED — arrived under sess_a, since replaced.* ask from agent:agt_peer#sess_peer \(msg_e1\) .*"hello"\n$/,
    );
    expect(w.out.taken[1]).toBe(
      '[mail 2] address changed (session_lapsed): agent:agt_me#sess_a → agent:agt_me#sess_b · mail to the old address bounces; peers need the new one\n',
    );
    expect(w.out.taken[2]).toMatch(/^\[mail 3\] entry odd could not be read as an MA2H entry \(.*\); --raw prints it verbatim\n$/);
  });

  describe('possibly bounced: an entry that arrived under a session this entry has since left', () => {
    const session = (history: string[]) => ({
      id: 'sess_now',
      address: 'agent:agt_me#sess_now',
      name: null,
      pinned: false,
      lease_seconds: 900,
      expires_at: '2026-09-18T14:48:07.000Z',
      renewed_at: 0,
      history: history.map((id) => ({ id, address: `agent:agt_me#${id}`, replaced_at: 0, reason: 'session_lapsed' })),
    });
    const bounced = (line: string | undefined) => line?.includes('POSSIBLY BOUNCED') ?? false;

    it('left through session.json history', async () => {
      const w = world([entryRecord('e1', 'x', 'sess_old'), entryRecord('e2', 'y', 'sess_now'), entryRecord('e3', 'z', 'sess_other')]);
      w.stateDir.write('session', session(['sess_old']));
      await w.printer().printAvailable();
      expect(w.out.taken.map(bounced)).toEqual([true, false, false]);
    });

    it('left by a stand-down (oh-hai session close)', async () => {
      const w = world([entryRecord('e1', 'x', 'sess_gone')]);
      w.stateDir.write('stoodDown', {
        sessions: [{ id: 'sess_gone', address: 'agent:agt_me#sess_gone', hub_state: 'closed', closed_at: null, stood_down_at: 0 }],
      });
      await w.printer().printAvailable();
      expect(w.out.taken.map(bounced)).toEqual([true]);
    });

    it('never the current session, and nothing without a record of leaving', async () => {
      const w = world([entryRecord('e1', 'x', 'sess_now'), entryRecord('e2', 'y', 'sess_a')]);
      w.stateDir.write('session', session([]));
      await w.printer().printAvailable();
      expect(w.out.taken.map(bounced)).toEqual([false, false]);
    });
  });

  describe('collecting instead of printing (the MCP server reads this way)', () => {
    it('takes every record with its summary, leaves stdout and the cursor alone until commit, then makes the cursor durable', async () => {
      const w = world([entryRecord('e1', 'one', 'sess_old'), entryRecord('e2', 'two')]);
      w.stateDir.write('session', {
        id: 'sess_a',
        address: 'agent:agt_me#sess_a',
        name: null,
        pinned: false,
        lease_seconds: 900,
        expires_at: 'x',
        renewed_at: 0,
        history: [{ id: 'sess_old', address: 'agent:agt_me#sess_old', replaced_at: 0, reason: 'session_lapsed' }],
      });
      const collected = new Collected();
      const p = new Printer(w.stateDir, w.out, false, () => false, collected);
      await p.printAvailable();
      expect(w.out.taken).toEqual([]);
      expect(readCursor(w.dir)).toEqual({ seq: 0, offset: 0 });
      expect(collected.taken.map((t) => [t.item.record.seq, t.possiblyBounced])).toEqual([
        [1, true],
        [2, false],
      ]);
      expect(collected.taken[0]!.text).toMatch(/^\[mail 1\] POSSIBLY BOUNCED/);
      expect(collected.taken[1]!.text).toMatch(/^\[mail 2\] ask from .*"two"\n$/);
      expect(p.printed).toBe(2);
      collected.commit();
      expect(readCursor(w.dir)).toEqual({ seq: 2, offset: w.ends()[1] });
      // a second commit with nothing new taken leaves the cursor where it is
      w.stateDir.writeCursor({ seq: 1, offset: w.ends()[0]! });
      collected.commit();
      expect(readCursor(w.dir)).toEqual({ seq: 1, offset: w.ends()[0] });
    });

    it('a stop request ends the collection; nothing taken, nothing committed', async () => {
      const w = world([entryRecord('e1'), entryRecord('e2')]);
      const collected = new Collected();
      await new Printer(w.stateDir, w.out, false, () => collected.taken.length >= 1, collected).printAvailable();
      expect(collected.taken).toHaveLength(1);
      const none = new Collected();
      none.commit();
      expect(readCursor(w.dir)).toEqual({ seq: 0, offset: 0 });
      collected.commit();
      expect(readCursor(w.dir).seq).toBe(1);
    });

    it('a transition is taken as an address change, never as possibly bounced', async () => {
      const w = world([
        {
          type: 'transition',
          event: 'address_changed',
          from_session: 'sess_a',
          to_session: 'sess_b',
          from_address: 'agent:agt_me#sess_a',
          to_address: 'agent:agt_me#sess_b',
          reason: 'session_lapsed',
        },
      ]);
      const collected = new Collected();
      await new Printer(w.stateDir, w.out, false, () => false, collected).printAvailable();
      expect(collected.taken.map((t) => [t.possiblyBounced, t.text.startsWith('[mail 1] address changed')])).toEqual([[false, true]]);
    });
  });

  it('--raw escapes what a terminal must not see, so the line stays one line', async () => {
    const w = world([entryRecord('e1', 'bidi \u202e and C1 \u0085')]);
    await w.printer(true).printAvailable();
    expect(w.out.taken[0]).not.toMatch(/[\u202e\u0085]/);
    expect(w.out.taken[0]!.split('\n')).toHaveLength(2);
  });
});
