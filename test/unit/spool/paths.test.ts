import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hubOrigin, listStateDirs, principalStateDir, resolveStateRoot, sessionStateDir, stateKey } from '../../../src/spool/index.js';
import { tempDir } from './tmp.js';

describe('state root', () => {
  it('takes an absolute --state-home, else $XDG_STATE_HOME, else ~/.local/state', () => {
    expect(resolveStateRoot({ stateHome: '/srv/state/', env: { XDG_STATE_HOME: '/x' } })).toEqual({ ok: true, value: '/srv/state/' });
    expect(resolveStateRoot({ env: { XDG_STATE_HOME: '/x', HOME: '/home/u' } })).toEqual({ ok: true, value: '/x' });
    expect(resolveStateRoot({ env: { HOME: '/home/u' } })).toEqual({ ok: true, value: '/home/u/.local/state' });
  });

  it('refuses a relative --state-home and says why and what to do', () => {
    const r = resolveStateRoot({ stateHome: 'state', env: { HOME: '/home/u' } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toContain('absolute');
      expect(r.reason).toContain('"state"');
      expect(r.reason).toContain('shared');
      expect(r.reason).toContain('--state-home "$PWD/state"');
    }
    expect(resolveStateRoot({ stateHome: '', env: {} }).ok).toBe(false);
  });
});

describe('state key', () => {
  it('is 32 hex of sha256 over origin, agent id and session key', () => {
    const k = stateKey('https://hub.example', 'agt_1', 'builder-1');
    expect(k).toMatch(/^[0-9a-f]{32}$/);
    // sha256("https://hub.example\nagt_1\nbuilder-1")
    const { createHash } = require('node:crypto') as typeof import('node:crypto');
    expect(k).toBe(createHash('sha256').update('https://hub.example\nagt_1\nbuilder-1').digest('hex').slice(0, 32));
  });

  it('normalises the Hub origin: case, default port, path', () => {
    const k = stateKey('https://hub.example', 'agt_1', 's');
    expect(stateKey('HTTPS://Hub.Example:443/v1/inbox?x=1', 'agt_1', 's')).toBe(k);
    expect(stateKey('https://hub.example:8443', 'agt_1', 's')).not.toBe(k);
    expect(stateKey('http://hub.example', 'agt_1', 's')).not.toBe(k);
    expect(stateKey('https://hub.example', 'agt_2', 's')).not.toBe(k);
    expect(stateKey('https://hub.example', 'agt_1', 't')).not.toBe(k);
    expect(hubOrigin('http://127.0.0.1:8080/')).toEqual({ ok: true, value: 'http://127.0.0.1:8080' });
    expect(hubOrigin('not a url').ok).toBe(false);
    expect(hubOrigin('ftp://x').ok).toBe(false);
  });

  it('places entries under oh-hai/bridge and lists both legs', () => {
    const root = tempDir();
    const k1 = stateKey('https://h', 'a', 's1');
    const k2 = stateKey('https://h', 'a', 's2');
    expect(sessionStateDir(root, k1)).toBe(path.join(root, 'oh-hai', 'bridge', 'sessions', k1));
    expect(principalStateDir(root, k2)).toBe(path.join(root, 'oh-hai', 'bridge', 'principal', k2));
    expect(listStateDirs(root)).toEqual([]);
    mkdirSync(sessionStateDir(root, k1), { recursive: true });
    mkdirSync(principalStateDir(root, k2), { recursive: true });
    mkdirSync(path.join(root, 'oh-hai', 'bridge', 'sessions', 'not-a-key'));
    expect(listStateDirs(root)).toEqual([
      { leg: 'session', key: k1, dir: sessionStateDir(root, k1) },
      { leg: 'principal', key: k2, dir: principalStateDir(root, k2) },
    ]);
  });
});
