import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs, { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { fakeClock } from '../../../src/util/clock.js';
import { describeRepair, openStateDir, sessionStateDir, type ConsumerSettings } from '../../../src/spool/index.js';
import { tempDir } from './tmp.js';

const mode = (p: string) => statSync(p).mode & 0o777;
const logCtx = { clock: fakeClock(Date.parse('2026-09-18T14:00:00.000Z')), pid: 4242 };

describe('openStateDir', () => {
  it('creates the entry 0700 (parents too) and its records 0600', () => {
    const root = tempDir();
    const dir = sessionStateDir(root, 'a'.repeat(32));
    const r = openStateDir(dir, { create: true, log: logCtx });
    if (!r.ok) throw new Error(r.reason);
    expect(mode(dir)).toBe(0o700);
    expect(mode(path.join(root, 'oh-hai'))).toBe(0o700);
    expect(r.value.repairs).toEqual([]);
    const settings: ConsumerSettings = {
      hub: 'http://127.0.0.1:1',
      agent_id: 'agt_1',
      session_key: 'k',
      pinned: null,
      name: 'k',
      transport: 'poll',
      interval_seconds: 0.2,
      max_retries: 8,
      unattended_max_seconds: 900,
      allow_from: null,
      agent: null,
      leg: 'session',
    };
    r.value.write('settings', settings);
    expect(r.value.read('settings')).toEqual({ state: 'ok', value: settings });
    expect(r.value.read('consumer')).toEqual({ state: 'absent' });
    expect(mode(path.join(dir, 'settings.json'))).toBe(0o600);
  });

  it('without create, an absent entry is reported as absent', () => {
    const r = openStateDir(path.join(tempDir(), 'nope'), { create: false });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.code).toBe('absent');
  });

  it('repairs a world-readable entry and its files, reports each repair, and logs it', () => {
    const dir = path.join(tempDir(), 'entry');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    writeFileSync(path.join(dir, 'bridge.ndjson'), '', { mode: 0o644 });
    chmodSync(path.join(dir, 'bridge.ndjson'), 0o644);
    writeFileSync(path.join(dir, 'cursor.json'), '{"seq":0,"offset":0}', { mode: 0o600 });
    const r = openStateDir(dir, { create: false, log: logCtx });
    if (!r.ok) throw new Error(r.reason);
    expect(r.value.repairs).toEqual([
      { path: dir, was: '0755', now: '0700' },
      { path: path.join(dir, 'bridge.ndjson'), was: '0644', now: '0600' },
    ]);
    expect(mode(dir)).toBe(0o700);
    expect(mode(path.join(dir, 'bridge.ndjson'))).toBe(0o600);
    expect(describeRepair(r.value.repairs[1]!)).toContain('from 0644 to 0600');
    const log = readFileSync(path.join(dir, 'bridge.log'), 'utf8');
    expect(log).toContain(`2026-09-18T14:00:00.000Z 4242 tightened permissions on ${dir} from 0755 to 0700`);
    expect(mode(path.join(dir, 'bridge.log'))).toBe(0o600);
    // a second open finds nothing left to repair
    const again = openStateDir(dir, { create: false });
    expect(again.ok && again.value.repairs).toEqual([]);
  });

  it('refuses an entry owned by another uid, naming it and the fix', () => {
    const dir = path.join(tempDir(), 'entry');
    mkdirSync(dir, { mode: 0o700 });
    // as if another user (uid 999999) ran us against this one's entry
    const r = openStateDir(dir, { create: false, uid: 999_999 });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.code).toBe('foreign_owner');
      expect(r.reason).toContain(dir);
      expect(r.reason).toContain('--state-home');
    }
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a file inside owned by another uid (root: chown)', () => {
    const dir = path.join(tempDir(), 'entry');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(path.join(dir, 'consumer.json'), '{}', { mode: 0o600 });
    chownSync(path.join(dir, 'consumer.json'), 4321, 4321);
    const r = openStateDir(dir, { create: false });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('consumer.json');
  });

  it('refuses a directory where one of its files belongs, naming it and the fix, before repairing anything', () => {
    const dir = path.join(tempDir(), 'entry');
    mkdirSync(dir, { mode: 0o700 });
    for (const name of ['reader.json', 'bridge.ndjson']) {
      mkdirSync(path.join(dir, name), { mode: 0o755 });
      chmodSync(path.join(dir, name), 0o755);
      const r = openStateDir(dir, { create: false });
      const p = path.join(dir, name);
      expect(r).toEqual({
        ok: false,
        code: 'not_a_file',
        reason: `${p} is a directory where oh-hai keeps a file; nothing in it is oh-hai's. Remove it (rm -r '${p}') and run again`,
      });
      expect(mode(p)).toBe(0o755);
      fs.rmdirSync(p);
    }
    // Its lock is a directory (proper-lockfile's mkdir), and any other directory is not oh-hai's to judge.
    mkdirSync(path.join(dir, 'consumer.lock'));
    mkdirSync(path.join(dir, 'elsewhere'));
    expect(openStateDir(dir, { create: false }).ok).toBe(true);
  });

  it('leaves what is neither a file nor a directory alone (a symbolic link to a world-readable file, a fifo)', () => {
    const root = tempDir();
    const dir = path.join(root, 'entry');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(path.join(root, 'outside'), '', { mode: 0o644 });
    chmodSync(path.join(root, 'outside'), 0o644);
    symlinkSync(path.join(root, 'outside'), path.join(dir, 'link'));
    execFileSync('mkfifo', ['-m', '0644', path.join(dir, 'fifo')]);
    const r = openStateDir(dir, { create: false, uid: lstatSync(dir).uid });
    if (!r.ok) throw new Error(r.reason);
    expect(r.value.repairs).toEqual([]);
    expect(mode(path.join(root, 'outside'))).toBe(0o644);
    expect(lstatSync(path.join(dir, 'fifo')).mode & 0o777).toBe(0o644);
  });

  // Dirents make Node 20 compile its Dirent code on every bridge run (docs/performance.md "Warm bridge (session 14)").
  it('lists the entry by name, without Dirents', () => {
    const dir = path.join(tempDir(), 'entry');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(path.join(dir, 'cursor.json'), '{"seq":0,"offset":0}', { mode: 0o600 });
    const spy = vi.spyOn(fs, 'readdirSync');
    syncBuiltinESMExports();
    try {
      expect(openStateDir(dir, { create: false }).ok).toBe(true);
      expect(spy).toHaveBeenCalled();
      for (const call of spy.mock.calls) expect(call[1]).toBeUndefined();
    } finally {
      spy.mockRestore();
      syncBuiltinESMExports();
    }
  });

  it('refuses a symbolic link in place of the entry', () => {
    const root = tempDir();
    mkdirSync(path.join(root, 'real'), { mode: 0o700 });
    symlinkSync(path.join(root, 'real'), path.join(root, 'link'));
    const r = openStateDir(path.join(root, 'link'), { create: false });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.code).toBe('not_a_directory');
  });
});

describe('the state entry owns the files its reader and consumer exchange', () => {
  const open = () => {
    const r = openStateDir(path.join(tempDir(), 'e'), { create: true });
    if (!r.ok) throw new Error(r.reason);
    return r.value;
  };

  it('the settings digest is sha256 of the bytes parsed, computed in one place (also for bytes that are not UTF-8)', () => {
    const e = open();
    expect(e.readSettings()).toEqual({ read: { state: 'absent' }, digest: null });
    const settings = { hub: 'http://127.0.0.1:1', agent_id: 'agt_1', session_key: 'k', pinned: null, transport: 'poll', interval_seconds: 1 };
    // A name holding a lone 0xff byte: decoded as U+FFFD it parses, and a digest of the decoded text would differ.
    const bytes = Buffer.concat([
      Buffer.from(JSON.stringify({ ...settings, name: 'x' }).replace('"x"', '"'), 'utf8'),
      Buffer.from([0xff]),
      Buffer.from('", "max_retries": 8, "unattended_max_seconds": 900, "allow_from": null, "agent": null, "leg": "session"}\n'),
    ]);
    writeFileSync(e.path('settings.json'), bytes);
    const s = e.readSettings();
    expect(s.read.state).toBe('ok');
    expect(s.digest).toBe(createHash('sha256').update(bytes).digest('hex'));
    writeFileSync(e.path('settings.json'), '{garbage');
    expect(e.readSettings().digest).toBe(createHash('sha256').update('{garbage').digest('hex'));
  });

  it('reported-stop.json and reader-displaced.json are record kinds: typed write, read back, garbage reads as unreadable', () => {
    const e = open();
    e.write('reportedStop', { pid: 12, start_time: null, stopped_at: 5 });
    expect(e.read('reportedStop')).toEqual({ state: 'ok', value: { pid: 12, start_time: null, stopped_at: 5 } });
    const notice = { displaced: { pid: 1, host: 'h', start_time: 's' }, by: { pid: 2, host: 'h' } };
    e.write('readerDisplaced', notice);
    expect(e.read('readerDisplaced')).toEqual({ state: 'ok', value: notice });
    expect(mode(e.path('reader-displaced.json'))).toBe(0o600);
    writeFileSync(e.path('reported-stop.json'), '{"pid":"12","start_time":null,"stopped_at":5}');
    expect(e.read('reportedStop')).toMatchObject({ state: 'unreadable', reason: expect.stringMatching(/reported stop field 'pid' is not an integer/) });
    writeFileSync(e.path('reader-displaced.json'), '{"displaced":{"pid":1,"host":"h"},"by":{"pid":2,"host":"h"}}');
    expect(e.read('readerDisplaced')).toMatchObject({
      state: 'unreadable',
      reason: expect.stringMatching(/displacement notice displaced has no 'start_time'/),
    });
  });
});
