import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AckResult, Session } from '../../../src/hub/contract/index.js';
import type { HubResult } from '../../../src/hub/client/index.js';
import { ADOPTION_STEPS, adoptLegacyHome, type AdoptionStep, type LegacyHub } from '../../../src/cli/resolve/adopt-legacy.js';
import { findLegacyHome } from '../../../src/cli/resolve/legacy-hook.js';
import { consumerHome } from '../../../src/consumer/home.js';
import { openStateDir, SpoolReader, type StateDir } from '../../../src/spool/index.js';
import {
  adoptedHome,
  claimLegacyHome,
  convertLegacySpool,
  stateDirSpoolEmpty,
  markerNote,
  readAdoptionMarker,
  readLegacyHome,
  writeAdoptedCursor,
  writeAdoptedSpool,
  writeAdoptionRecord,
  type AdoptionMarker,
} from '../../../src/spool/legacy.js';
import { sealLine } from '../../../src/spool/line.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from './tmp.js';

const HUB = 'http://127.0.0.1:7777';
const AGENT = 'agt_me';
const SIG = (n: number) => `t=1789740000,jti=${'j'.repeat(16)}${n},alg=hmac-sha256,v1=${'0'.repeat(64)}`;

const entry = (n: number, session = 'sess_old') => ({
  id: `ent_${n}`,
  kind: 'directive',
  from: 'human:acct_1',
  to: `agent:${AGENT}#${session}`,
  created_at: '2026-09-18T13:59:59.000Z',
  text: `text ${n} \u2028 "quoted"`,
});

const oldEntryLine = (seq: number, n: number, session = 'sess_old') =>
  JSON.stringify({ seq, received_at: `2026-09-18T14:00:0${n}.000Z`, session, entry: entry(n, session), signature: SIG(n) }) + '\n';

const oldTransition = (seq: number, from: string, to: string) =>
  JSON.stringify({
    seq,
    received_at: '2026-09-18T14:00:05.000Z',
    event: 'address_changed',
    from_session: from,
    to_session: to,
    from_address: `agent:${AGENT}#${from}`,
    to_address: `agent:${AGENT}#${to}`,
    reason: 'session_lapsed',
  }) + '\n';

interface Home {
  work: string;
  dir: string;
}

function legacyHome(over: Record<string, unknown> = {}, spool = '', cursor: string | null = null): Home {
  const work = path.join(tempDir(), 'project');
  const dir = path.join(work, '.oh-hai', 'bridge');
  mkdirSync(dir, { recursive: true });
  const session = { id: 'sess_old', address: `agent:${AGENT}#sess_old`, name: 'dir-name', hub: HUB, agent_id: AGENT, home: 'legacy-home-1', ...over };
  writeFileSync(path.join(dir, 'session.json'), JSON.stringify(session));
  writeFileSync(path.join(dir, 'bridge.ndjson'), spool);
  if (cursor !== null) writeFileSync(path.join(dir, 'cursor'), cursor);
  return { work, dir };
}

function newEntry(): StateDir {
  const opened = openStateDir(path.join(tempDir(), 'state', 'entry'), { create: true });
  if (!opened.ok) throw new Error(opened.reason);
  return opened.value;
}

const snapshot = (dir: string): Record<string, string> => Object.fromEntries(readdirSync(dir).map((n) => [n, readFileSync(path.join(dir, n), 'utf8')]));

describe('the 0.9 layout', () => {
  it('reads session.json and consumer.pid; a session without the home it presented is not adoptable', () => {
    const h = legacyHome();
    writeFileSync(path.join(h.dir, 'consumer.pid'), '4242\n');
    const r = readLegacyHome(h.dir);
    expect(r.ok && r.value).toEqual({
      dir: h.dir,
      session: { id: 'sess_old', address: `agent:${AGENT}#sess_old`, name: 'dir-name', hub: HUB, agent_id: AGENT, home: 'legacy-home-1' },
      consumerPid: 4242,
    });
    writeFileSync(path.join(h.dir, 'consumer.pid'), 'garbage');
    const garbage = readLegacyHome(h.dir);
    expect(garbage.ok && garbage.value.consumerPid).toBeNull();
    const noHome = legacyHome({ home: undefined });
    const bad = readLegacyHome(noHome.dir);
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.reason).toContain("no 'home'");
    expect(readLegacyHome(legacyHome({ hub: 'not a url' }).dir).ok).toBe(false);
  });

  it('is found from the working directory or the nearest parent, and not without session.json', () => {
    const h = legacyHome();
    const deep = path.join(h.work, 'src', 'deep');
    mkdirSync(deep, { recursive: true });
    expect(findLegacyHome(deep)).toBe(h.dir);
    expect(findLegacyHome(h.work)).toBe(h.dir);
    const bare = path.join(tempDir(), 'p');
    mkdirSync(path.join(bare, '.oh-hai', 'bridge'), { recursive: true });
    expect(findLegacyHome(bare)).toBeNull();
  });
});

describe('convertLegacySpool', () => {
  it('re-sequences 0.9 records from 1 in the current format, byte for byte otherwise, and maps the cursor', () => {
    const current =
      sealLine({ seq: 9, type: 'entry', received_at: '2026-09-18T14:00:09.000Z', session: 'sess_old', entry: entry(9), signature: SIG(9) }) + '\n';
    const h = legacyHome({}, oldEntryLine(3, 1) + oldTransition(5, 'sess_older', 'sess_old') + oldEntryLine(7, 2) + current, '5\n');
    const c = convertLegacySpool(h.dir, 'sess_old');
    expect(c.records).toBe(4);
    expect(c.unread).toBe(2);
    expect(c.notes).toEqual([]);
    const E = newEntry();
    writeAdoptedSpool(E.dir, c);
    writeAdoptedCursor(E.dir, c);
    const items = new SpoolReader(E.dir).readAfter(0);
    expect(items.map((i) => i.record.seq)).toEqual([1, 2, 3, 4]);
    expect(items.map((i) => i.record.type)).toEqual(['entry', 'transition', 'entry', 'entry']);
    const first = items[0]!.record;
    expect(first.type === 'entry' && first).toMatchObject({ received_at: '2026-09-18T14:00:01.000Z', session: 'sess_old', entry: entry(1), signature: SIG(1) });
    // The cursor is the record that was 0.9 seq 5, and it validates against the new spool.
    expect(c.cursor).toEqual({ seq: 2, offset: items[1]!.end });
    expect(E.checkedCursor()).toEqual({ cursor: c.cursor, rewound: null });
    expect(c.history).toEqual([
      { id: 'sess_older', address: `agent:${AGENT}#sess_older`, replaced_at: Date.parse('2026-09-18T14:00:05.000Z'), reason: 'session_lapsed' },
    ]);
  });

  it('stops at a damaged line or a seq that does not increase, and says what it left behind', () => {
    const h = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2) + '{"seq":3,"garb\n' + oldEntryLine(4, 4), '1');
    const c = convertLegacySpool(h.dir, 'sess_old');
    expect(c.records).toBe(2);
    expect(c.unread).toBe(1);
    expect(c.notes.join()).toMatch(/bytes at the end of .*bridge\.ndjson were not carried over \(byte \d+: the line is not JSON\)/);

    const back = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2) + oldEntryLine(2, 3));
    expect(convertLegacySpool(back.dir, 'sess_old').records).toBe(2);
    expect(convertLegacySpool(back.dir, 'sess_old').notes.join()).toContain('seq 2 does not follow 2');

    const torn = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2).slice(0, 30));
    const t = convertLegacySpool(torn.dir, 'sess_old');
    expect(t.records).toBe(1);
    expect(t.notes.join()).toContain('a line without its newline (torn write)');
  });

  it('an unreadable cursor counts as nothing printed (re-print, never skip); a missing spool is an empty one', () => {
    const h = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2), 'seven');
    const c = convertLegacySpool(h.dir, 'sess_old');
    expect(c.cursor).toEqual({ seq: 0, offset: 0 });
    expect(c.unread).toBe(2);
    expect(c.notes.join()).toContain('every carried-over record counts as unread');
    const empty = legacyHome();
    expect(convertLegacySpool(empty.dir, 'sess_old')).toMatchObject({ text: '', records: 0, unread: 0, notes: [] });
  });
});

describe('the marker and the adoption record', () => {
  const marker = (into: string): AdoptionMarker => ({
    into,
    session: 'sess_old',
    state: 'started',
    started_at: '2026-09-18T14:00:00.000Z',
    done_at: null,
    note: markerNote(into),
  });

  it('exactly one claim wins, complete, and no temp file is left behind', () => {
    const h = legacyHome();
    expect(claimLegacyHome(h.dir, marker('/e/one'))).toBe('claimed');
    expect(claimLegacyHome(h.dir, marker('/e/two'))).toBe('taken');
    const read = readAdoptionMarker(h.dir);
    expect(read.state === 'ok' && read.value.into).toBe('/e/one');
    expect(readdirSync(h.dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('the entry keeps presenting the adopted home; every other entry presents its own digest', () => {
    const E = newEntry();
    const own = consumerHome(E.dir);
    expect(own).toMatch(/^[0-9a-f]{32}$/);
    expect(adoptedHome(E.dir)).toBeNull();
    writeAdoptionRecord(E.dir, { from: '/x/.oh-hai/bridge', session: 'sess_old', home: 'legacy-home-1', records: 0, adopted_at: 1 });
    expect(adoptedHome(E.dir)).toBe('legacy-home-1');
    expect(consumerHome(E.dir)).toBe('legacy-home-1');
    writeFileSync(path.join(E.dir, 'adopted-0.9.json'), JSON.stringify({ from: '/x', session: 's', home: 'has space', records: 0, adopted_at: 1 }));
    expect(consumerHome(E.dir)).toBe(own);
  });

  it('a spool with records is not empty; an absent or empty one is', () => {
    const E = newEntry();
    expect(stateDirSpoolEmpty(E.dir)).toBe(true);
    writeFileSync(E.path('bridge.ndjson'), '');
    expect(stateDirSpoolEmpty(E.dir)).toBe(true);
    writeFileSync(E.path('bridge.ndjson'), oldEntryLine(1, 1));
    expect(stateDirSpoolEmpty(E.dir)).toBe(false);
  });
});

function session(state: Session['state'], over: Partial<Session> = {}): Session {
  return {
    id: 'sess_old',
    agent_id: AGENT,
    address: `agent:${AGENT}#sess_old`,
    name: 'dir-name',
    state,
    lease_seconds: 900,
    expires_at: '2026-09-18T14:10:00.000Z',
    last_renewed_at: '2026-09-18T13:55:00.000Z',
    created_at: '2026-09-18T13:00:00.000Z',
    closed_at: null,
    holder: null,
    ...over,
  };
}

const answered = <T>(value: T): HubResult<T> => ({ ok: true, status: 200, value, serverDate: null });

function fakeHub(get: HubResult<Session>): LegacyHub & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    getSession: async (id) => (calls.push(`get ${id}`), get),
    renew: async (id) => {
      calls.push(`renew ${id}`);
      return answered<AckResult>({ delivered: 0, acknowledged: 0, unknown: [], session: { id, expires_at: '2026-09-18T14:25:00.000Z', lease_seconds: 900 } });
    },
    close: async () => undefined,
  };
}

const NOW = Date.parse('2026-09-18T14:10:00.000Z');

function request(h: Home, E: StateDir, hub: LegacyHub, over: { agentId?: string; pinned?: string | null; steps?: AdoptionStep[] } = {}) {
  return {
    legacyDir: h.dir,
    stateDir: E,
    io: { env: {}, cwd: h.work, clock: fakeClock(NOW), pid: process.pid },
    hubUrl: HUB,
    token: 'tok_secret',
    agentId: over.agentId ?? AGENT,
    pinned: over.pinned ?? null,
    hub,
    afterStep: (s: AdoptionStep) => over.steps?.push(s),
  };
}

describe('adoptLegacyHome (the Hub faked)', () => {
  it('adopts a home whose session is active: every step in order, the session presented once, one line to say so', async () => {
    const h = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2) + oldEntryLine(3, 3), '2');
    const E = newEntry();
    const hub = fakeHub(answered(session('active')));
    const steps: AdoptionStep[] = [];
    const r = await adoptLegacyHome(request(h, E, hub, { steps }));
    expect(r.ok).toBe(true);
    const lines = r.ok ? r.value : [];
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^adopted the 0\.9 bridge home .* session sess_old \(agent:agt_me#sess_old\) kept, 3 records carried over \(1 unread\) with the cursor; .*adopted\.json says where it went/,
    );
    expect(steps).toEqual([...ADOPTION_STEPS]);
    expect(hub.calls).toEqual(['get sess_old', 'renew sess_old']);
    const s = E.read('session');
    expect(s.state === 'ok' && s.value).toEqual({
      id: 'sess_old',
      address: `agent:${AGENT}#sess_old`,
      name: 'dir-name',
      pinned: false,
      lease_seconds: 900,
      expires_at: '2026-09-18T14:25:00.000Z',
      renewed_at: NOW,
      history: [],
    });
    expect(E.readCursor().seq).toBe(2);
    const m = readAdoptionMarker(h.dir);
    expect(m.state === 'ok' && m.value).toMatchObject({ into: E.dir, session: 'sess_old', state: 'done', done_at: '2026-09-18T14:10:00.000Z' });
    expect(consumerHome(E.dir)).toBe('legacy-home-1');
    // The 0.9 files are all still there, unchanged.
    expect(readFileSync(path.join(h.dir, 'bridge.ndjson'), 'utf8')).toBe(oldEntryLine(1, 1) + oldEntryLine(2, 2) + oldEntryLine(3, 3));
    expect(readFileSync(path.join(h.dir, 'cursor'), 'utf8')).toBe('2');
  });

  it('leaves a home that is not live exactly as it was, and says so', async () => {
    const h = legacyHome({}, oldEntryLine(1, 1), '0');
    const before = snapshot(h.dir);
    const E = newEntry();
    const r = await adoptLegacyHome(request(h, E, fakeHub(answered(session('lapsed')))));
    expect(r.ok && r.value.join()).toMatch(
      /found a 0\.9 bridge home at .* but it is not live: its session sess_old is lapsed and no 0\.9 connection is running; not adopted/,
    );
    expect(snapshot(h.dir)).toEqual(before);
    expect(existsSync(E.path('session.json'))).toBe(false);
    expect(existsSync(E.path('bridge.ndjson'))).toBe(false);
    const gone = await adoptLegacyHome(
      request(
        h,
        E,
        fakeHub({ ok: false, failure: { kind: 'http', status: 404, code: 'session_not_found', message: 'no', details: {}, retryAfterSeconds: null } }),
      ),
    );
    expect(gone.ok && gone.value.join()).toContain('is unknown to the Hub and no 0.9 connection is running');
  });

  it('another agent, another Hub or another pinned session: named, not adopted', async () => {
    for (const [over, want] of [
      [{ agentId: 'agt_other' }, /for agent agt_me at http:\/\/127\.0\.0\.1:7777, not this agent session's \(agent agt_other/],
      [{ pinned: 'sess_else' }, /holding session sess_old, but this run pins sess_else; not adopted/],
    ] as const) {
      const h = legacyHome({}, oldEntryLine(1, 1));
      const hub = fakeHub(answered(session('active')));
      const r = await adoptLegacyHome(request(h, newEntry(), hub, over));
      expect(r.ok && r.value.join()).toMatch(want);
      expect(hub.calls).toEqual([]);
      expect(existsSync(path.join(h.dir, 'adopted.json'))).toBe(false);
    }
  });

  it('never merges into a spool that holds records', async () => {
    const h = legacyHome({}, oldEntryLine(1, 1));
    const E = newEntry();
    writeFileSync(E.path('bridge.ndjson'), sealLine({ seq: 1, type: 'entry', received_at: 'x', session: 's', entry: { id: 'e' }, signature: 's' }) + '\n');
    const before = readFileSync(E.path('bridge.ndjson'), 'utf8');
    const r = await adoptLegacyHome(request(h, E, fakeHub(answered(session('active')))));
    expect(r.ok && r.value.join()).toMatch(/already holds records, and adoption never merges two spools; not adopted/);
    expect(readFileSync(E.path('bridge.ndjson'), 'utf8')).toBe(before);
    expect(existsSync(path.join(h.dir, 'adopted.json'))).toBe(false);
  });

  it('a home another entry adopted is silent; one this entry claimed resumes even though it is no longer live', async () => {
    const h = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2), '1');
    claimLegacyHome(h.dir, { into: '/elsewhere', session: 'sess_old', state: 'done', started_at: 'x', done_at: 'y', note: markerNote('/elsewhere') });
    const hub = fakeHub(answered(session('active')));
    expect(await adoptLegacyHome(request(h, newEntry(), hub))).toEqual({ ok: true, value: [] });
    expect(hub.calls).toEqual([]);

    const mine = legacyHome({}, oldEntryLine(1, 1) + oldEntryLine(2, 2), '1');
    const E = newEntry();
    claimLegacyHome(mine.dir, {
      into: E.dir,
      session: 'sess_old',
      state: 'started',
      started_at: '2026-09-18T14:00:00.000Z',
      done_at: null,
      note: markerNote(E.dir),
    });
    const r = await adoptLegacyHome(request(mine, E, fakeHub(answered(session('lapsed')))));
    expect(r.ok && r.value.join()).toMatch(/2 records carried over \(1 unread\).*the session itself is lapsed, so the connection registers a new one/);
    const s = E.read('session');
    expect(s.state === 'ok' && s.value.id).toBe('sess_old');
    const m = readAdoptionMarker(mine.dir);
    expect(m.state === 'ok' && m.value).toMatchObject({ state: 'done', started_at: '2026-09-18T14:00:00.000Z' });
  });

  it('a Hub that cannot say whether the home is live ends the run before anything moves', async () => {
    const h = legacyHome({}, oldEntryLine(1, 1));
    const E = newEntry();
    const r = await adoptLegacyHome(request(h, E, fakeHub({ ok: false, failure: { kind: 'network', message: 'connect ECONNREFUSED' } })));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatchObject({ code: 'hub_unreachable', exit: 13 });
    expect(!r.ok && r.error.message).toContain('nothing was adopted yet');
    expect(existsSync(path.join(h.dir, 'adopted.json'))).toBe(false);
    const denied = await adoptLegacyHome(
      request(h, E, fakeHub({ ok: false, failure: { kind: 'http', status: 401, code: 'unauthorized', message: 'no', details: {}, retryAfterSeconds: null } })),
    );
    expect(!denied.ok && denied.error.exit).toBe(3);
  });
});
