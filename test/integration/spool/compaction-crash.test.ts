import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SpoolReader, readCursor, sealedSegments, validateCursor, writeCursor, type Cursor } from '../../../src/spool/index.js';
import { repoRoot } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { onLines } from '../../helpers/process.js';
import { withSeed } from '../../helpers/seed.js';

/**
 * Segments sealed and removed under kill -9 (docs/spool.md "Crash safety"): a stand-in
 * connection (fixtures/compactor.mjs, the consumer's real drain state) seals a segment every
 * 16 records and removes every printed, settled one, while this process reads as the reader
 * does — and is killed at seeded random instants, often inside a seal or a removal. The reader
 * itself "dies" now and then between printing a record and moving its cursor.
 *
 * Promised: nothing spooled is ever lost unprinted; a record is printed again only after a
 * reader death, at most one per death; the cursor is never rewound; every kill leaves a
 * contiguous spool. OH_HAI_CRASH_SEED=<n> repeats a run; a failure prints its seed.
 */

const compactor = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'compactor.mjs');
const KILLS = 20;

interface Run {
  /** The highest seq the connection reported durable. */
  spooled: number;
  compactions: number;
  seals: number;
  printed: number[];
  readerDeaths: number;
}

/** The reader: prints what follows its cursor, moving the cursor after each record (or "dying" before it does). */
class Reader {
  cursor: Cursor;
  constructor(
    private readonly dir: string,
    private readonly run: Run,
    readonly rand: () => number,
  ) {
    this.cursor = readCursor(dir);
  }

  step(): void {
    for (const item of new SpoolReader(this.dir).readFrom(this.cursor, 8)) {
      this.run.printed.push(item.record.seq);
      if (this.rand() < 0.02) {
        // killed after the write, before the cursor: the next reader starts from the file
        this.run.readerDeaths += 1;
        this.cursor = readCursor(this.dir);
        return;
      }
      this.cursor = { seq: item.record.seq, offset: item.end };
      writeCursor(this.dir, this.cursor);
    }
  }
}

/** Run the connection until it has reported `steps` durable steps (reading meanwhile), then SIGKILL it. */
async function runAndKill(dir: string, seed: number, steps: number, run: Run, reader: Reader): Promise<void> {
  const child = spawn(process.execPath, [compactor, dir, String(seed)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let seen = 0;
  // The reader falls behind now and then, so unprinted records sit in sealed segments too.
  const timer = setInterval(() => {
    if (reader.rand() < 0.08) reader.step();
  }, 2);
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  onLines(child.stdout, (lines) => {
    for (const line of lines) {
      const [what, value] = line.split(' ');
      if (what === 'spooled') run.spooled = Math.max(run.spooled, Number(value));
      if (what === 'compacted') run.compactions += 1;
      seen += 1;
    }
    if (seen >= steps && child.exitCode === null) child.kill('SIGKILL');
  });
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  clearInterval(timer);
  if (exit.signal !== 'SIGKILL') throw new Error(`the connection stopped on its own (code ${exit.code}): ${stderr}`);
}

function checkAfterKill(dir: string, run: Run): void {
  const reader = new SpoolReader(dir);
  const items = reader.readAfter(0);
  const head = reader.headSeq();
  // contiguous from the oldest segment kept to the last record, and nothing reported durable is missing
  items.forEach((item, i) => expect(item.record.seq).toBe(head + i));
  expect(items.at(-1)?.record.seq ?? head - 1).toBeGreaterThanOrEqual(run.spooled);
  // nothing after the (durable) cursor was removed, and the cursor still stands
  const cursor = readCursor(dir);
  expect(head).toBeLessThanOrEqual(cursor.seq + 1);
  expect(validateCursor(reader, cursor).rewound).toBeNull();
  run.seals = Math.max(run.seals, sealedSegments(dir).at(-1)?.first ?? 0);
}

describe('spool segments under kill -9', () => {
  const env = tempEnv();
  afterAll(() => env.cleanup());

  it(`lose nothing unprinted and re-print only one per reader death across ${KILLS} kills of sealing and compacting`, async () => {
    expect(existsSync(path.join(repoRoot, 'dist', 'consumer', 'state.js'))).toBe(true);
    await withSeed('compaction crash run', async (rand) => {
      const dir = path.join(env.root, 'entry');
      mkdirSync(dir, { mode: 0o700 });
      const run: Run = { spooled: 0, compactions: 0, seals: 0, printed: [], readerDeaths: 0 };
      const reader = new Reader(dir, run, rand);
      for (let kill = 0; kill < KILLS; kill++) {
        await runAndKill(dir, Math.floor(rand() * 2 ** 31), 1 + Math.floor(rand() * 150), run, reader);
        checkAfterKill(dir, run);
      }
      // the final drain: everything durable gets printed
      for (let i = 0; i < 10_000 && reader.cursor.seq < run.spooled; i++) reader.step();
      let reprints = 0;
      for (let i = 1; i < run.printed.length; i++) {
        const [before, now] = [run.printed[i - 1]!, run.printed[i]!];
        if (now === before + 1) continue;
        // never a skip; a repeat is the record a dead reader had printed without moving its cursor
        expect(now, `printed ${before} then ${now}`).toBeLessThanOrEqual(before);
        expect(now).toBe(before);
        reprints += 1;
      }
      expect(reprints).toBeLessThanOrEqual(run.readerDeaths);
      expect(run.printed[0]).toBe(1);
      expect(run.printed.at(-1)).toBeGreaterThanOrEqual(run.spooled);
      // the run did seal and remove segments, often
      expect(run.seals).toBeGreaterThan(16);
      expect(run.compactions).toBeGreaterThan(KILLS / 4);
    });
  }, 300_000);
});
