import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpoolReader, readCursor, sealedSegments } from '../../../src/spool/index.js';
import { waitFor } from '../../helpers/wait.js';
import { bridge, directive, stateDirOf, registered, useBridgeWorld } from './world.js';

const world = useBridgeWorld();

/** The seqs of the summary lines a run printed. */
const mailSeqs = (stdout: string): number[] => [...stdout.matchAll(/^\[mail (\d+)\]/gm)].map((m) => Number(m[1]));

describe('[bridge] retain_printed on real processes (docs/spool.md)', () => {
  it('"0 records": the connection seals the spool and removes what was printed and acknowledged, never what was not', async () => {
    const a = await world.agent({ OH_HAI_RETAIN_PRINTED: '0 records' });
    const first = await bridge(a, 'retain', ['--wait', '0']);
    expect(first.code).toBe(0);
    const dir = stateDirOf(a, world.hub, 'retain');
    const sid = await registered(dir);
    // resolved by the reader into the connection's settings (absent would mean the default)
    expect(JSON.parse(readFileSync(path.join(dir, 'settings.json'), 'utf8')).retain_printed).toEqual({ records: 0, days: 7, bytes: 64 * 2 ** 20 });
    const reader = new SpoolReader(dir);

    const printed: number[] = [];
    for (let round = 1; round <= 3; round++) {
      for (let i = 0; i < 20; i++) await directive(world.hub, `agent:${a.id}#${sid}`, `round ${round} message ${i}`);
      await waitFor(() => reader.lastSeq() >= round * 20, { timeoutMs: 30_000, what: `${round * 20} records spooled` });
      const r = await bridge(a, 'retain', ['--wait', '0']);
      expect(r.code).toBe(0);
      printed.push(...mailSeqs(r.stdout));
    }
    expect(printed).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    // once the Hub took the acks, the printed segments go (16 records each at "0 records")
    await waitFor(() => reader.headSeq() > 32, { timeoutMs: 30_000, what: 'printed segments removed' });
    expect(readFileSync(path.join(dir, 'bridge.log'), 'utf8')).toMatch(
      /spool: removed \d+ segments? \(seq 1\u2013\d+, \d+ bytes\): printed, acknowledged at the Hub and past retain_printed \(0 records \/ 7 days \/ 64 MiB\)/,
    );

    // mail nobody has read yet stays, however small the bound, and prints in order after the removal
    for (let i = 0; i < 40; i++) await directive(world.hub, `agent:${a.id}#${sid}`, `unread ${i}`);
    await waitFor(() => reader.lastSeq() >= 100, { timeoutMs: 30_000, what: '100 records spooled' });
    expect(sealedSegments(dir).length).toBeGreaterThan(0);
    expect(reader.headSeq()).toBeLessThanOrEqual(readCursor(dir).seq + 1);
    const rest = await bridge(a, 'retain', ['--wait', '0']);
    expect(rest.code).toBe(0);
    expect(mailSeqs(rest.stdout)).toEqual(Array.from({ length: 40 }, (_, i) => i + 61));
  }, 180_000);
});
