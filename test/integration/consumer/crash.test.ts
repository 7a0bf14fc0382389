import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CursorWriter } from '../../../src/spool/index.js';
import type { TestHub } from '../../helpers/hub.js';
import { withSeed } from '../../helpers/seed.js';
import { exited, expectEachAcknowledgedOnce, FAST_HUB, hubCall, killWhen, useBenches, type Bench } from './harness.js';

/**
 * The safety property under kill -9 (DESIGN.md "The safety property"): kill the consumer —
 * and separately the Hub — at random instants during bursts, while a test reader prints
 * records one at a time. At the end every message is spooled exactly once, acknowledged at
 * the Hub, and never acknowledged before the reader's cursor passed it. The instants and the
 * reader's pace are seeded: OH_HAI_CRASH_SEED=<n> repeats a run, and a failure names its seed.
 */

const CONSUMER_TRIALS = 36;
const HUB_TRIALS = 16;
const LEDGER_TRIALS = 12;
const BURST = 8;
/**
 * Each run is bounded work (its trials) and then its own deadline (45 s for every ack): vitest's
 * 60 s default raced that, and both runs timed out at load 17 in a CI run (63.8 s and 60.6 s,
 * with the consumer still making progress). Above the trials at that load plus the deadline.
 */
const RUN_TIMEOUT_MS = 240_000;

/**
 * Acts as `oh-hai bridge`: prints (here: notes) the next complete record, then advances
 * the cursor past it — one record at a time, at a random pace, in place as the bridge does
 * (CursorWriter.step, often several within one mtime tick: the acker must still see each).
 * The instant is taken before the cursor is written, so "acknowledged at or after it" is a
 * conservative check.
 */
class TestReader {
  readonly passedAt = new Map<string, number>();
  private seq = 0;
  private offset = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly cursorFile: CursorWriter;

  constructor(
    private readonly bench: Bench,
    private readonly rand: () => number,
  ) {
    this.cursorFile = new CursorWriter(bench.dir);
  }

  start(): void {
    const step = () => {
      this.advance(1 + Math.floor(this.rand() * 3));
      this.timer = setTimeout(step, 5 + this.rand() * 30);
    };
    step();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.cursorFile.commit();
  }

  /** Print up to n records past the cursor; returns how many it printed. */
  advance(n: number): number {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path.join(this.bench.dir, 'bridge.ndjson'));
    } catch {
      return 0;
    }
    let printed = 0;
    while (printed < n) {
      // Only a complete line is a record: a torn tail has no newline yet.
      const nl = bytes.indexOf(0x0a, this.offset);
      if (nl < 0) break;
      const rec = JSON.parse(bytes.subarray(this.offset, nl).toString('utf8')) as { seq: number; type: string; entry?: { message_id?: string } };
      if (rec.seq !== this.seq + 1) throw new Error(`spool out of order: seq ${rec.seq} after ${this.seq}`);
      const at = Date.now();
      const offset = nl + 1;
      // As the real reader does: a step in place per record, an atomic replace now and then.
      this.cursorFile.step({ seq: rec.seq, offset });
      if (this.rand() < 0.2) this.cursorFile.commit();
      this.seq = rec.seq;
      this.offset = offset;
      if (rec.type === 'entry' && rec.entry?.message_id) this.passedAt.set(rec.entry.message_id, at);
      printed += 1;
    }
    return printed;
  }
}

/** A whole ledger line that records an entry as spooled (Ledger.recordSpooled's, written unsynced). */
function isEntryLine(line: string): boolean {
  try {
    return (JSON.parse(line) as { op?: string }).op === 'entry';
  } catch {
    return false;
  }
}

/**
 * What a power loss may take on top of a kill: the ledger's `entry` lines are written without an
 * fsync of their own (Ledger.recordSpooled), so any run of them at the file's end — after its
 * last fsynced line — may be gone, the last one kept may be torn. Every other write the
 * connection makes before an ack is fsynced, and a kill keeps the page cache, so nothing else is
 * cut. Returns how many lines it cut.
 */
function loseLedgerTail(dir: string, rand: () => number): number {
  const file = path.join(dir, 'ledger.ndjson');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return 0;
  }
  const lines = text.split('\n');
  // A whole file ends with "\n": its last piece is empty; otherwise the last piece is a torn line.
  let keep = lines.length - 1;
  let trailing = 0;
  while (keep - trailing - 1 >= 0 && isEntryLine(lines[keep - trailing - 1]!)) trailing += 1;
  const cut = Math.ceil(rand() * trailing);
  if (cut === 0) return 0;
  keep -= cut;
  const torn = rand() < 0.3 ? lines[keep]!.slice(0, Math.floor(rand() * lines[keep]!.length)) : '';
  writeFileSync(
    file,
    lines
      .slice(0, keep)
      .map((l) => l + '\n')
      .join('') + torn,
  );
  return cut;
}

/** The last whole line of the ledger is an `entry` line: the connection just wrote what it spooled, unsynced. */
function ledgerEndsWithEntry(file: string): boolean {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  const end = text.lastIndexOf('\n');
  return isEntryLine(text.slice(text.lastIndexOf('\n', end - 1) + 1, end));
}

/** SIGKILL the consumer as soon as its ledger ends with an `entry` line, or after `ms`. */
function killAtLedgerEntry(dir: string, consumer: ChildProcess, ms: number): Promise<void> {
  const file = path.join(dir, 'ledger.ndjson');
  return killWhen(file, consumer, () => ledgerEndsWithEntry(file), ms);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every message: spooled exactly once, acknowledged at the Hub, and never before the reader passed it. */
async function checkInvariants(bench: Bench, reader: TestReader, sent: string[]): Promise<void> {
  await expectEachAcknowledgedOnce(bench, sent, () => reader.advance(Infinity));
  for (const id of sent) {
    const m = await bench.track(id);
    const ackAt = Date.parse(m.track.find((t) => t.state === 'acknowledged')!.at);
    const passed = reader.passedAt.get(id);
    expect(passed, `${id} acknowledged without the reader passing it`).toBeDefined();
    expect(ackAt, `${id} acknowledged before the cursor passed it`).toBeGreaterThanOrEqual(passed!);
  }
}

const world = useBenches({ args: FAST_HUB }, { logTail: 60 });

/** A bench whose consumer is running, with a test reader printing its records as they come. */
async function burstRig(hub: TestHub, rand: () => number): Promise<{ bench: Bench; consumer: ChildProcess; reader: TestReader }> {
  const bench = await world.bench({ on: hub });
  bench.settings({ max_retries: 1000 });
  bench.attend();
  // The first consumer gets as far as running, so every later one finds a record of its killed predecessor.
  const consumer = bench.start();
  await bench.waitRunning();
  const reader = new TestReader(bench, rand);
  reader.start();
  return { bench, consumer, reader };
}

describe('kill -9 at random instants', () => {
  it(
    `the consumer, ${CONSUMER_TRIALS} times during bursts: nothing lost, nothing spooled twice, nothing acknowledged early`,
    async () => {
      await withSeed('consumer kill run', async (rand) => {
        const rig = await burstRig(world.hub, rand);
        const { bench, reader } = rig;
        let consumer = rig.consumer;
        const sent: string[] = [];
        try {
          for (let trial = 0; trial < CONSUMER_TRIALS; trial += 1) {
            for (let i = 0; i < BURST; i += 1) sent.push(await bench.notify(`trial ${trial} message ${i}`));
            await pause(rand() * 250);
            consumer.kill('SIGKILL');
            await exited(consumer);
            consumer = bench.start();
            // Random instants cover start-up too: sometimes it is killed before it gets anywhere.
            await pause(50 + rand() * 250);
          }
          await checkInvariants(bench, reader, sent);
        } finally {
          reader.stop();
        }
        expect(consumer.exitCode).toBeNull();
      });
    },
    RUN_TIMEOUT_MS,
  );

  it(
    `the consumer right at its ledger's unsynced write, ${LEDGER_TRIALS} times, that tail then lost as in a power loss: the same invariants`,
    async () => {
      await withSeed('ledger tail run', async (rand) => {
        const rig = await burstRig(world.hub, rand);
        const { bench, reader } = rig;
        let consumer = rig.consumer;
        const sent: string[] = [];
        let lost = 0;
        try {
          for (let trial = 0; trial < LEDGER_TRIALS; trial += 1) {
            const killed = killAtLedgerEntry(bench.dir, consumer, 5_000);
            for (let i = 0; i < BURST / 2; i += 1) sent.push(await bench.notify(`ledger trial ${trial} message ${i}`));
            await killed;
            await exited(consumer);
            if (loseLedgerTail(bench.dir, rand) > 0) lost += 1;
            consumer = bench.start();
            await pause(50 + rand() * 250);
          }
          await checkInvariants(bench, reader, sent);
        } finally {
          reader.stop();
        }
        // Some kills landed while unsynced lines were the tail (the watch wakes after the write; the ack may win the race): the loss was exercised.
        expect(lost).toBeGreaterThan(0);
        expect(consumer.exitCode).toBeNull();
      });
    },
    RUN_TIMEOUT_MS,
  );

  it(
    `the Hub, ${HUB_TRIALS} times during bursts: the consumer reconnects, and the same invariants hold`,
    async () => {
      // A Hub of its own: this test kills it.
      const hub = await world.ownHub({ args: FAST_HUB });
      const { bench, consumer, reader } = await withSeed('Hub kill run', async (rand) => {
        const rig = await burstRig(hub, rand);
        const sent: string[] = [];
        try {
          for (let trial = 0; trial < HUB_TRIALS; trial += 1) {
            for (let i = 0; i < BURST; i += 1) sent.push(await rig.bench.notify(`hub trial ${trial} message ${i}`));
            await pause(rand() * 200);
            await hub.kill('SIGKILL');
            await hub.restart();
          }
          await checkInvariants(rig.bench, rig.reader, sent);
        } finally {
          rig.reader.stop();
        }
        return rig;
      });
      expect(consumer.exitCode).toBeNull();
      expect(bench.consumer()!.state).toBe('running');
      const s = await hubCall(hub, 'GET', `/v1/sessions/${bench.session()!.id}`, { token: bench.me.token });
      expect(s.body.session.state).toBe('active');
    },
    RUN_TIMEOUT_MS,
  );
});
