import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeenJti } from '../../../src/spool/index.js';
import { tempDir } from './tmp.js';

function load(dir: string): SeenJti {
  const r = SeenJti.load(dir);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

describe('SeenJti', () => {
  it('persists {jti: t} atomically and reloads it', () => {
    const dir = tempDir();
    const s = load(dir);
    expect(s.has('jti_aaaaaaaaaaaaaaaa')).toBe(false);
    s.add('jti_aaaaaaaaaaaaaaaa', 1000);
    s.add('jti_bbbbbbbbbbbbbbbb', 1200);
    s.persist();
    const file = path.join(dir, 'seen-jti.json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ jti_aaaaaaaaaaaaaaaa: 1000, jti_bbbbbbbbbbbbbbbb: 1200 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = load(dir);
    expect(again.has('jti_aaaaaaaaaaaaaaaa')).toBe(true);
    expect(again.size).toBe(2);
  });

  it('prunes what the replay window has passed, and only that', () => {
    const dir = tempDir();
    const s = load(dir);
    s.add('old', 1000);
    s.add('edge', 1300);
    s.add('new', 1500);
    expect(s.prune(1600, 300)).toBe(1);
    expect([s.has('old'), s.has('edge'), s.has('new')]).toEqual([false, true, true]);
    s.persist();
    expect(Object.keys(JSON.parse(readFileSync(path.join(dir, 'seen-jti.json'), 'utf8')))).toEqual(['edge', 'new']);
  });

  it('an unreadable set is a failure, never an empty set', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'seen-jti.json'), '{"a": "not a number"}');
    expect(SeenJti.load(dir).ok).toBe(false);
    const dir2 = tempDir();
    mkdirSync(path.join(dir2, 'seen-jti.json'));
    const r = SeenJti.load(dir2);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('directory');
  });

  it.each([
    ['an array', '[]', 'the seen-jti set is not a JSON object'],
    ['null', 'null', 'the seen-jti set is not a JSON object'],
    ['a number', '7', 'the seen-jti set is not a JSON object'],
    ['a string t', '{"jti_a": "1000"}', 'the seen-jti set has a non-numeric t for "jti_a"'],
    ['a null t', '{"jti_a": null}', 'the seen-jti set has a non-numeric t for "jti_a"'],
    // JSON.parse reads 1e999 as Infinity: a number, but no instant (it would never age out of the window)
    ['an infinite t', '{"jti_a": 1e999}', 'the seen-jti set has a non-numeric t for "jti_a"'],
  ])('refuses %s, saying why', (_what, text, reason) => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'seen-jti.json'), text);
    const r = SeenJti.load(dir);
    expect(r).toEqual({ ok: false, reason: `${path.join(dir, 'seen-jti.json')}: ${reason}` });
  });

  it('persists only what changed: nothing new, nothing pruned, no write', () => {
    const dir = tempDir();
    const s = load(dir);
    s.persist();
    expect(existsSync(path.join(dir, 'seen-jti.json'))).toBe(false);
    s.add('a', 1500);
    expect(s.prune(1600, 300)).toBe(0);
    s.persist();
    rmSync(path.join(dir, 'seen-jti.json'));
    expect(s.prune(1600, 300)).toBe(0);
    s.persist();
    expect(existsSync(path.join(dir, 'seen-jti.json'))).toBe(false);
    expect(s.prune(2000, 300)).toBe(1);
    s.persist();
    expect(JSON.parse(readFileSync(path.join(dir, 'seen-jti.json'), 'utf8'))).toEqual({});
  });
});
