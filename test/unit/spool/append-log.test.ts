import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppendLog, type AppendLogFailure, type AppendLogSpec } from '../../../src/spool/append-log.js';
import { tempDir } from './tmp.js';

class Coded extends Error {
  constructor(
    readonly kind: AppendLogFailure,
    message: string,
  ) {
    super(message);
  }
}

const spec = (file: string): AppendLogSpec => ({ file, what: 'test log', error: (kind, message) => new Coded(kind, message) });
const wholeFile = (end: number) => () => ({ end, stop: null });

// The open and recovery failures are reported as values naming the file, never thrown:
// the owners (spool, ledger) turn them into a refusal to start.
describe('AppendLog.open failures', () => {
  it('a file that cannot be opened is a failure naming it', () => {
    const dir = tempDir();
    const r = AppendLog.open(spec(dir), wholeFile(0));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason.startsWith(`cannot open the test log ${dir}: `)).toBe(true);
      expect(r.reason).toMatch(/EISDIR/);
    }
  });

  it('a recovery walk that throws is a failure naming the file and the cause', () => {
    const file = path.join(tempDir(), 'log.ndjson');
    writeFileSync(file, 'x\n');
    const r = AppendLog.open(spec(file), () => {
      throw new Error('walk failed');
    });
    expect(r).toEqual({ ok: false, reason: `cannot recover the test log ${file}: walk failed` });
  });

  it('an append after close is refused as broken, saying it is closed', () => {
    const file = path.join(tempDir(), 'log.ndjson');
    const r = AppendLog.open(spec(file), wholeFile(0));
    if (!r.ok) throw new Error(r.reason);
    r.value.log.close();
    expect(() => r.value.log.append('a\n')).toThrow(expect.objectContaining({ kind: 'broken', message: `the test log ${file} is closed` }));
  });
});
