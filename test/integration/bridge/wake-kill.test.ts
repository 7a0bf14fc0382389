import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCursorRecord } from '../../../src/spool/index.js';
import { collect, runOhHai, startOhHai } from '../../helpers/cli.js';
import { withSeed } from '../../helpers/seed.js';
import { waitFor } from '../../helpers/wait.js';
import { asleep } from './proc.js';
import { message, rawSeqs, stage, type Stage } from './stage.js';

/**
 * A waiting reader prints what its wake read — one read of the spool, the records handed
 * straight to the printer (docs/performance.md "Push latency"). SIGKILL it at random instants
 * after mail arrives while it waits: the next run must print every record the cursor had not
 * passed, none lost, at most the record in flight twice (DESIGN.md "The safety property",
 * reader half). The mail arrives in a few appends, so a wake can find part of it, and some
 * appends land in two writes, so a wake can find a partial line. Seeded:
 * OH_HAI_CRASH_SEED=<n> repeats a run.
 */
const TRIALS = 15;
const BURST = 12;

let st: Stage;
beforeAll(() => {
  st = stage();
  st.consumerRunning();
});
afterAll(() => st.cleanup());

describe('SIGKILL of a woken reader at random instants', () => {
  it(`${TRIALS} trials: the next run prints everything not yet passed, at most the one in flight twice, none lost`, async () => {
    const killedAt: number[] = [];
    await withSeed('woken reader kill run', async (rand) => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const from = st.cursor().seq;
        const last = from + BURST;
        const child = startOhHai(['bridge', '--raw', '--wait', '30'], { env: st.env });
        const pid = child.pid;
        // It has claimed the entry; then it is asleep in its wait, or (a third of the trials) still
        // starting, when its first read finds the mail.
        const claimed = () => {
          const r = st.stateDir.read('reader');
          return r.state === 'ok' && r.value.pid === pid;
        };
        await waitFor(claimed, { what: 'the reader to claim the entry' });
        if (rand() < 2 / 3) await asleep(pid!);
        const target = 1 + Math.floor(rand() * BURST);
        let seen = 0;
        child.stdout!.on('data', (d: Buffer) => {
          const before = seen;
          seen += d.toString('utf8').split('\n').length - 1;
          if (before < target && seen >= target) setTimeout(() => child.kill('SIGKILL'), rand() < 0.5 ? 0 : 1);
        });
        const done = collect(child);
        for (let sent = 0; sent < BURST;) {
          const n = Math.min(BURST - sent, 1 + Math.floor(rand() * BURST));
          const batch = Array.from({ length: n }, (_, i) => message(`trial ${trial} record ${sent + i + 1}`));
          // Now and then the batch lands in two writes: the wake the first one gives finds a partial line.
          if (rand() < 1 / 3) await st.appendTorn(batch, Math.floor(rand() * 3));
          else st.append(batch);
          sent += n;
        }
        const first = await done;
        const a = rawSeqs(first.stdout);
        if (first.signal === 'SIGKILL') killedAt.push(a.length);
        else expect(first.code, first.stderr).toBe(0);
        // What it printed is a prefix of what arrived after the cursor.
        expect(a).toEqual(Array.from({ length: a.length }, (_, i) => from + i + 1));
        // Before the first cursor write there is none: a kill between the first print and that
        // write (print → flush → cursor) leaves it absent, and the record prints again below.
        const cursorFile = readCursorRecord(st.stateDir.dir).state;
        if (from === 0 && a.length <= 1) expect(['ok', 'absent']).toContain(cursorFile);
        else expect(cursorFile).toBe('ok');
        const cursor = st.cursor().seq;
        expect(cursor === from + a.length || cursor === from + a.length - 1).toBe(true);

        const second = await runOhHai(['bridge', '--raw', '--wait', '0'], { env: st.env });
        expect(second.code, second.stderr).toBe(0);
        const b = rawSeqs(second.stdout);
        expect(b).toEqual(Array.from({ length: last - cursor }, (_, i) => cursor + i + 1));
        expect(a.filter((s) => b.includes(s)).length).toBeLessThanOrEqual(1);
        expect(new Set([...a, ...b]).size).toBe(BURST);
      }
    });
    // The kills really did land while a woken reader was printing.
    expect(killedAt.length).toBeGreaterThan(0);
  }, 180_000);
});
