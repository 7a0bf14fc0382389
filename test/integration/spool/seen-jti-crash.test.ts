import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LEGACY_SEEN_JTI, SeenJti, STATE_FILES } from '../../../src/spool/index.js';
import { repoRoot } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { runUntilKilled } from '../../helpers/process.js';
import { withSeed } from '../../helpers/seed.js';

const writer = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'seen-jti-writer.mjs');
const TRIALS = 30;
/** Small beside the log's rewrite threshold (1,024 pairs, four times the live ones): the run rewrites it several times. */
const WINDOW = 150;

interface Promised {
  /** Every t whose jti a persist returned for: the consumer may have acked on it. */
  persisted: number[];
  /** Pruned below this (a rewrite may then have dropped them). */
  prunedBelow: number;
  /** The highest t any writer may have added. */
  top: number;
}

/** Start the writer, let it report `steps` steps, then SIGKILL it. */
async function runAndKill(dir: string, steps: number, seed: number, promised: Promised): Promise<void> {
  const from = promised.top + 10;
  await runUntilKilled(writer, [dir, String(seed), String(from), String(WINDOW)], steps, (line) => {
    const [what, ...rest] = line.split(' ');
    if (what === 'persisted') promised.persisted.push(...rest.map(Number));
    else if (what === 'pruned') promised.prunedBelow = Math.max(promised.prunedBelow, Number(rest[0]));
  });
  // It may have added (not reported) up to four past its last report, and prunes only what it added.
  promised.top = Math.max(promised.top, from + 4 * steps + 4);
}

/** What the next consumer finds: it opens (a torn tail cut), and every jti persisted since the last prune's window is there. */
function checkInvariants(dir: string, promised: Promised): void {
  const r = SeenJti.load(dir);
  if (!r.ok) throw new Error(r.reason);
  const s = r.value;
  try {
    const missing = promised.persisted.filter((t) => t >= promised.prunedBelow && !s.has(`j${t}`));
    expect(missing, 'persisted jtis the set forgot').toEqual([]);
    expect(s.size).toBeLessThanOrEqual(promised.top);
  } finally {
    s.close();
  }
  expect(existsSync(path.join(dir, LEGACY_SEEN_JTI))).toBe(false);
}

describe('the seen-jti log under kill -9', () => {
  const env = tempEnv();
  afterAll(() => env.cleanup());

  it(`forgets no persisted jti across ${TRIALS} SIGKILLs at random points (rewrites and garbage tails among them)`, async () => {
    expect(existsSync(path.join(repoRoot, 'dist', 'spool', 'seen-jti.js'))).toBe(true);
    const dir = path.join(env.root, 'entry');
    mkdirSync(dir, { mode: 0o700 });
    // An older build's set, folded into the log by the first writer (or by the first check, if killed first).
    const legacy = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`j${i + 1}`, i + 1]));
    writeFileSync(path.join(dir, LEGACY_SEEN_JTI), JSON.stringify(legacy), { mode: 0o600 });
    const promised: Promised = { persisted: Array.from({ length: 50 }, (_, i) => i + 1), prunedBelow: 0, top: 50 };
    let garbage = 0;
    await withSeed('seen-jti kill run', async (rand) => {
      for (let trial = 0; trial < TRIALS; trial++) {
        await runAndKill(dir, 1 + Math.floor(rand() * 120), Math.floor(rand() * 2 ** 31), promised);
        checkInvariants(dir, promised);
        if (trial % 4 === 1) {
          // a crash that left garbage rather than a short line (power loss, a bad disk)
          appendFileSync(path.join(dir, STATE_FILES.seenJti), trial % 8 === 1 ? '{"seen":[["j1",1' : '{"seen":[],"sum":"00000000"}\n\u0000');
          garbage += 1;
        }
      }
    });
    expect(garbage).toBeGreaterThan(0);
    expect(promised.persisted.length).toBeGreaterThan(2 * 1024);
    // each trial starts a node process: give a loaded 2-core machine room
  }, 240_000);
});
