import { describe, expect, it } from 'vitest';
import { runBench } from './bench-run.js';

/**
 * The mutating Hub, CI-sized: bench/fuzz-consumer.mjs drives the real consumer through 200
 * mutated inbox streams (status codes, error bodies, headers, SSE framing, truncation,
 * stray bytes, stalls, hostile events) with a fixed seed, then lets everything drain. A small
 * retain_printed seals 16-record segments and removes printed, settled ones while it runs, so the
 * reader and the audit cross segments as a long-lived spool does (docs/spool.md). The
 * full-size run (10,000 streams) and its figures are in docs/reliability.md.
 */
const SEED = 5;

describe('mutating Hub (bench/fuzz-consumer.mjs, 200 streams)', () => {
  it('every exit a documented code, nothing unverified in the spool, nothing acknowledged unprinted, nothing lost', async () => {
    const r = await runBench(
      'fuzz-consumer.mjs',
      ['--streams', '200', '--seed', String(SEED), '--drain-seconds', '120', '--retain-printed', '160 records'],
      280_000,
    );
    console.log(r.output);
    expect(r.output).toContain(`seed ${SEED}`);
    expect(r.output).toMatch(/undocumented or crashes: 0/);
    expect(r.output).toMatch(/lost 0, acked-before-printed 0, unverified in spool 0/);
    expect(r.output).toContain('drained: yes');
    expect(r.code).toBe(0);
  }, 300_000);
});
