import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LEGACY_SEEN_JTI, SeenJti } from '../../../src/spool/index.js';
import { sealLine } from '../../../src/spool/line.js';
import { tempDir } from './tmp.js';

function load(dir: string): SeenJti {
  const r = SeenJti.load(dir);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const logOf = (dir: string) => path.join(dir, 'seen-jti.ndjson');
const linesOf = (dir: string): unknown[] =>
  readFileSync(logOf(dir), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { seen: unknown }).seen);

/** Loaded, checked and closed: what the next consumer would find. */
function reloaded(dir: string, jtis: readonly string[]): boolean[] {
  const s = load(dir);
  s.close();
  return jtis.map((j) => s.has(j));
}

describe('SeenJti', () => {
  it('appends one sealed line per persist, holding only what was added since the last, and reloads it', () => {
    const dir = tempDir();
    const s = load(dir);
    expect(s.has('jti_aaaaaaaaaaaaaaaa')).toBe(false);
    s.add('jti_aaaaaaaaaaaaaaaa', 1000);
    s.add('jti_bbbbbbbbbbbbbbbb', 1200);
    s.persist();
    s.add('jti_cccccccccccccccc', 1300);
    s.persist();
    expect(linesOf(dir)).toEqual([
      [
        ['jti_aaaaaaaaaaaaaaaa', 1000],
        ['jti_bbbbbbbbbbbbbbbb', 1200],
      ],
      [['jti_cccccccccccccccc', 1300]],
    ]);
    expect(statSync(logOf(dir)).mode & 0o777).toBe(0o600);
    s.close();
    const again = load(dir);
    expect([again.has('jti_aaaaaaaaaaaaaaaa'), again.has('jti_cccccccccccccccc'), again.size]).toEqual([true, true, 3]);
    again.close();
  });

  it('persists only what was added: nothing new, no write; a prune forgets in memory and writes nothing', () => {
    const dir = tempDir();
    const s = load(dir);
    s.persist();
    expect(readFileSync(logOf(dir), 'utf8')).toBe('');
    s.add('old', 1000);
    s.add('edge', 1300);
    s.add('new', 1500);
    s.persist();
    const before = readFileSync(logOf(dir), 'utf8');
    expect(s.prune(1600, 300)).toBe(1);
    expect([s.has('old'), s.has('edge'), s.has('new')]).toEqual([false, true, true]);
    s.persist();
    expect(readFileSync(logOf(dir), 'utf8')).toBe(before);
    s.close();
    // Read back, the pruned jti is older than the window: the next prune drops it again.
    const again = load(dir);
    expect(again.prune(1600, 300)).toBe(1);
    again.close();
  });

  it('a jti added and pruned before a persist is not written', () => {
    const dir = tempDir();
    const s = load(dir);
    s.add('stale', 1000);
    s.add('fresh', 1500);
    s.prune(1600, 300);
    s.persist();
    expect(linesOf(dir)).toEqual([[['fresh', 1500]]]);
    s.close();
  });

  it('rewrites the log as the live set once pruned pairs dominate it, and goes on appending', () => {
    const dir = tempDir();
    const s = load(dir);
    for (let i = 0; i < 1100; i++) {
      s.add(`j${i}`, i);
      if (i % 100 === 99) s.persist();
    }
    s.persist();
    expect(linesOf(dir)).toHaveLength(11);
    expect(s.prune(1100, 100)).toBe(1000);
    s.add('late', 1100);
    s.persist();
    // one line: the 100 live and the one just added
    const after = linesOf(dir) as [string, number][][];
    expect(after).toHaveLength(1);
    expect(after[0]).toHaveLength(101);
    expect(after[0]!.map(([j]) => j)).toContain('late');
    s.add('later', 1101);
    s.persist();
    expect(linesOf(dir)).toHaveLength(2);
    s.close();
    expect(reloaded(dir, ['j999', 'j1000', 'j1099', 'late', 'later'])).toEqual([false, true, true, true, true]);
  });

  it('folds a seen-jti.json an older build wrote into the log, then removes it; a kill between the two folds again', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, LEGACY_SEEN_JTI), JSON.stringify({ jti_old1: 1000, jti_old2: 1001 }));
    const s = load(dir);
    expect([s.has('jti_old1'), s.has('jti_old2')]).toEqual([true, true]);
    expect(existsSync(path.join(dir, LEGACY_SEEN_JTI))).toBe(false);
    expect(linesOf(dir)).toEqual([
      [
        ['jti_old1', 1000],
        ['jti_old2', 1001],
      ],
    ]);
    s.add('jti_new', 1002);
    s.persist();
    s.close();
    // As if killed after the log's append and before the unlink: both files, the union read.
    writeFileSync(path.join(dir, LEGACY_SEEN_JTI), JSON.stringify({ jti_old1: 1000, jti_old3: 1003 }));
    expect(reloaded(dir, ['jti_old1', 'jti_old2', 'jti_old3', 'jti_new'])).toEqual([true, true, true, true]);
    expect(existsSync(path.join(dir, LEGACY_SEEN_JTI))).toBe(false);
    expect(linesOf(dir)).toHaveLength(3);
  });

  it('cuts a torn or garbage tail (an interrupted append, never acked on) and keeps every line before it', () => {
    const dir = tempDir();
    const s = load(dir);
    s.add('a', 1000);
    s.persist();
    s.close();
    const whole = readFileSync(logOf(dir), 'utf8');
    appendFileSync(logOf(dir), '{"seen":[["b",10');
    const t = load(dir);
    expect(t.recovery).toEqual({ cutAt: whole.length, cutBytes: 16, reason: expect.stringContaining('torn write') as string });
    expect([t.has('a'), t.has('b')]).toEqual([true, false]);
    t.add('c', 1001);
    t.persist();
    t.close();
    appendFileSync(logOf(dir), '{"seen":[["d",1002]],"sum":"00000000"}\n\u0000\u0000');
    expect(reloaded(dir, ['a', 'c', 'd'])).toEqual([true, true, false]);
    expect(readFileSync(logOf(dir), 'utf8').split('\n')).toHaveLength(3);
  });

  it('refuses a log damaged before its last line: the jtis after it were acked on', () => {
    const dir = tempDir();
    writeFileSync(
      logOf(dir),
      [sealLine({ seen: [['a', 1000]] }), '{"seen":[["b",1001]],"sum":"00000000"}', sealLine({ seen: [['c', 1002]] })].join('\n') + '\n',
    );
    const r = SeenJti.load(dir);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/seen-jti\.ndjson: byte \d+: .*with valid lines after it \(damage, not a torn write\)/);
  });

  it('an unreadable set is a failure, never an empty set', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, LEGACY_SEEN_JTI), '{"a": "not a number"}');
    expect(SeenJti.load(dir).ok).toBe(false);
    const dir2 = tempDir();
    mkdirSync(path.join(dir2, LEGACY_SEEN_JTI));
    const r = SeenJti.load(dir2);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('directory');
    const dir3 = tempDir();
    mkdirSync(logOf(dir3));
    expect(SeenJti.load(dir3).ok).toBe(false);
  });

  it.each([
    ['an array', '[]', 'the seen-jti set is not a JSON object'],
    ['null', 'null', 'the seen-jti set is not a JSON object'],
    ['a number', '7', 'the seen-jti set is not a JSON object'],
    ['a string t', '{"jti_a": "1000"}', 'the seen-jti set has a non-numeric t for "jti_a"'],
    ['a null t', '{"jti_a": null}', 'the seen-jti set has a non-numeric t for "jti_a"'],
    // JSON.parse reads 1e999 as Infinity: a number, but no instant (it would never age out of the window)
    ['an infinite t', '{"jti_a": 1e999}', 'the seen-jti set has a non-numeric t for "jti_a"'],
  ])('refuses a seen-jti.json holding %s, saying why', (_what, text, reason) => {
    const dir = tempDir();
    writeFileSync(path.join(dir, LEGACY_SEEN_JTI), text);
    const r = SeenJti.load(dir);
    expect(r).toEqual({ ok: false, reason: `${path.join(dir, LEGACY_SEEN_JTI)}: ${reason}` });
  });

  it.each([
    ['no list', { seen: 7 }, 'without its "seen" list'],
    ['a pair that is not one', { seen: [['a']] }, 'a pair that is not [jti, t]'],
    ['a string t', { seen: [['a', '1000']] }, 'non-numeric t for "a"'],
  ])('refuses a sealed line with %s before a valid one', (_what, line, reason) => {
    const dir = tempDir();
    writeFileSync(logOf(dir), [sealLine(line), sealLine({ seen: [['c', 1002]] })].join('\n') + '\n');
    const r = SeenJti.load(dir);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });
});
