import { describe, expect, it } from 'vitest';
import { runBench } from './bench-run.js';

/**
 * "Kill anything, lose nothing", CI-sized: bench/soak.mjs with 50 kill -9s of the
 * connection, the reader and the Hub during continuous traffic, then a final drain. The
 * seed is fixed so a failure replays (the bench prints the command); the full-size run
 * (≥ 1,000 kills) and its figures are in docs/reliability.md.
 */
const SEED = 18;

describe('kill soak (bench/soak.mjs, 50 kills)', () => {
  it('nothing lost, nothing re-printed beyond one per reader kill, nothing acknowledged before it was printed, no unexplained exit', async () => {
    const r = await runBench('soak.mjs', ['--kills', '50', '--seed', String(SEED), '--drain-seconds', '120'], 280_000);
    console.log(r.output);
    expect(r.output).toContain(`seed ${SEED}`);
    expect(r.output).toMatch(/kills: 50 \(consumer \d+, reader \d+, hub \d+\)/);
    expect(r.output).toMatch(/lost 0, duplicated \d+ \(beyond one per reader kill: 0\), acked-before-printed 0/);
    expect(r.output).toContain('unexpected exits: 0; drained: yes');
    expect(r.code).toBe(0);
  }, 300_000);
});
