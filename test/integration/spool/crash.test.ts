import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger, Spool, SpoolReader, readCursor, validateCursor } from '../../../src/spool/index.js';
import { systemClock } from '../../../src/util/clock.js';
import { repoRoot } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { runUntilKilled } from '../../helpers/process.js';
import { withSeed } from '../../helpers/seed.js';

const writer = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'spool-writer.mjs');
const TRIALS = 50;

interface Promised {
  spooledSeq: number;
  inLedger: Set<string>;
  /** Acks started (the ledger may or may not have them) and acks finished. */
  acking: Set<string>;
  acked: Set<string>;
  cursorSeq: number;
}

/** Start the writer, let it run until it has reported `steps` durable steps, then SIGKILL it. */
async function runAndKill(dir: string, steps: number, writerSeed: number, promised: Promised): Promise<void> {
  await runUntilKilled(writer, [dir, String(writerSeed)], steps, (line) => {
    const [what, ...rest] = line.split(' ');
    if (what === 'spooled') promised.spooledSeq = Math.max(promised.spooledSeq, Number(rest[0]));
    else if (what === 'ledger') rest.forEach((id) => promised.inLedger.add(id));
    else if (what === 'acking') rest.forEach((id) => promised.acking.add(id));
    else if (what === 'acked') rest.forEach((id) => promised.acked.add(id));
    else if (what === 'cursor') promised.cursorSeq = Number(rest[0]);
  });
}

function checkInvariants(dir: string, promised: Promised): void {
  // a reader sees exactly the contiguous records, and no record the writer reported durable is missing
  const items = new SpoolReader(dir).readAfter(0);
  items.forEach((item, i) => expect(item.record.seq).toBe(i + 1));
  expect(items.length).toBeGreaterThanOrEqual(promised.spooledSeq);
  // kill -9 never invalidates the cursor: no valid record is ever cut
  const cursor = readCursor(dir);
  expect(cursor.seq).toBeGreaterThanOrEqual(promised.cursorSeq);
  expect(validateCursor(new SpoolReader(dir), cursor).rewound).toBeNull();

  const spool = Spool.open(dir, { clock: systemClock });
  if (!spool.ok) throw new Error(spool.reason);
  const ledger = Ledger.open(dir);
  if (!ledger.ok) throw new Error(ledger.reason);
  try {
    expect(spool.value.lastSeq()).toBe(items.length);
    const pending = ledger.value.pending();
    // the ledger only names records that exist, at their seq and session
    for (const e of pending) expect(spool.value.spooledAt(e.id)).toEqual({ seq: e.seq, session: e.session });
    const pendingIds = new Set(pending.map((e) => e.id));
    // what the writer recorded is still owed an ack until its acknowledgement started; a finished one is gone
    for (const id of promised.inLedger) if (!promised.acking.has(id)) expect(pendingIds.has(id)).toBe(true);
    for (const id of promised.acked) expect(pendingIds.has(id)).toBe(false);
    // nothing past the cursor was acknowledged
    for (const id of promised.acking) expect(spool.value.spooledAt(id)?.seq ?? Infinity).toBeLessThanOrEqual(cursor.seq);
  } finally {
    spool.value.close();
    ledger.value.close();
  }
}

describe('spool and ledger under kill -9', () => {
  const env = tempEnv();
  afterAll(() => env.cleanup());

  it(`keep every promise across ${TRIALS} SIGKILLs at random points, with garbage tails in between`, async () => {
    expect(existsSync(path.join(repoRoot, 'dist', 'spool', 'index.js'))).toBe(true);
    const dir = path.join(env.root, 'entry');
    mkdirSync(dir, { mode: 0o700 });
    const promised: Promised = { spooledSeq: 0, inLedger: new Set(), acking: new Set(), acked: new Set(), cursorSeq: 0 };
    let recovered = 0;
    await withSeed('spool kill run', async (rand) => {
      for (let trial = 0; trial < TRIALS; trial++) {
        await runAndKill(dir, 1 + Math.floor(rand() * 25), Math.floor(rand() * 2 ** 31), promised);
        checkInvariants(dir, promised);
        if (trial % 3 === 1) {
          // a crash that left garbage rather than a short line (power loss, a bad disk)
          appendFileSync(path.join(dir, 'bridge.ndjson'), Buffer.from([0x7b, 0x22, 0x00, 0xff, 0x0a, 0x41]));
          appendFileSync(path.join(dir, 'ledger.ndjson'), '{"op":"delivered","ids":["x');
          recovered += 1;
        }
      }
      // the last trial may have left garbage: the next open recovers it like any other
      checkInvariants(dir, promised);
    });
    const all = new SpoolReader(dir).readAfter(0);
    expect(all.length).toBeGreaterThan(TRIALS);
    expect(recovered).toBeGreaterThan(0);
    expect(readFileSync(path.join(dir, 'bridge.ndjson'), 'utf8').endsWith('\n')).toBe(true);
    // each trial starts a node process: give a loaded 2-core machine room
  }, 240_000);
});
