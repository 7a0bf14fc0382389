import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STATE_FILES, SeenJti } from '../../../src/spool/index.js';
import { arrived, delivery, openIngest } from './deliveries.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const open = openIngest;

const fresh = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-ingest-'));
  dirs.push(d);
  return d;
};

describe('Ingest', () => {
  it('spools a verified batch in one append; the ledger and seen-jti set follow at commit, before any ack', () => {
    const s = open(fresh());
    const r = s.ingest.run([delivery('ent_1'), delivery('ent_2')], arrived, s.ctx());
    expect(r).toEqual({ ok: true, spooled: 2, redelivered: 0 });
    expect(s.spool.lastSeq()).toBe(2);
    expect(s.ledger.pending()).toEqual([]);
    s.ingest.commit();
    expect(s.ledger.pending().map((p) => [p.id, p.seq, p.session, p.state])).toEqual([
      ['ent_1', 1, 'sess_a', 'spooled'],
      ['ent_2', 2, 'sess_a', 'spooled'],
    ]);
    const reloaded = SeenJti.load(s.spool.dir);
    expect(reloaded.ok && reloaded.value.size).toBe(2);
  });

  it('never spools an entry id twice: a redelivery (new jti) is only re-acked', () => {
    const s = open(fresh());
    s.ingest.run([delivery('ent_1')], arrived, s.ctx());
    const again = s.ingest.run([delivery('ent_1'), delivery('ent_1')], arrived, s.ctx());
    expect(again).toEqual({ ok: true, spooled: 0, redelivered: 2 });
    expect(s.spool.lastSeq()).toBe(1);
  });

  it('the same entry id twice in one batch (two jtis) is spooled once and ledgered once', () => {
    const s = open(fresh());
    expect(s.ingest.run([delivery('ent_1'), delivery('ent_2'), delivery('ent_1')], arrived, s.ctx())).toEqual({ ok: true, spooled: 2, redelivered: 1 });
    expect(s.spool.readAfter(0).map((i) => i.record.type === 'entry' && i.record.entry.id)).toEqual(['ent_1', 'ent_2']);
    s.ingest.commit();
    expect(s.ledger.pending().map((p) => [p.id, p.seq])).toEqual([
      ['ent_1', 1],
      ['ent_2', 2],
    ]);
    expect(readFileSync(path.join(s.spool.dir, STATE_FILES.ledger), 'utf8').trim().split('\n')).toHaveLength(2);
    // both jtis are remembered: a replay of either is refused
    expect(s.seen.size).toBe(3);
  });

  it('after a crash between the spool and the ledger, a redelivery ledgers the spooled record with its own seq — no second record', () => {
    const dir = fresh();
    const first = open(dir);
    first.ingest.run([delivery('ent_1'), delivery('ent_2')], arrived, first.ctx());
    first.close(); // died before any commit
    const next = open(dir);
    expect(next.ledger.pending()).toEqual([]);
    expect(next.ingest.run([delivery('ent_2')], arrived, next.ctx())).toMatchObject({ ok: true, spooled: 0, redelivered: 1 });
    next.ingest.commit();
    expect(next.ledger.pending().map((p) => [p.id, p.seq])).toEqual([['ent_2', 2]]);
    expect(next.spool.lastSeq()).toBe(2);
  });

  it('a batch with one bad delivery is refused whole: 12, nothing spooled', () => {
    const s = open(fresh());
    const r = s.ingest.run([delivery('ent_ok'), delivery('ent_bad', { x_extra: 1 })], arrived, s.ctx());
    expect(r).toMatchObject({
      ok: false,
      stop: { exit: 12, reason: 'verification_failed', message: /entry ent_bad failed verification \(entry_shape\).*Nothing from this delivery was spooled/ },
    });
    expect(s.spool.lastSeq()).toBe(0);
  });

  it('a policy refusal is not a stop: the entry is skipped and logged once however often it is redelivered', () => {
    const s = open(fresh());
    const refuse = () => ({ admit: false as const, reason: 'no policy' });
    for (let i = 0; i < 3; i += 1) expect(s.ingest.run([delivery('ent_ask')], arrived, s.ctx(refuse))).toEqual({ ok: true, spooled: 0, redelivered: 0 });
    expect(s.spool.lastSeq()).toBe(0);
    expect(s.logs.filter((l) => l.includes('refused entry ent_ask'))).toHaveLength(1);
  });

  it('a compromised lock stops before the append (1, lock_compromised)', () => {
    const s = open(fresh());
    s.unhealthy();
    expect(s.ingest.run([delivery('ent_1')], arrived, s.ctx())).toMatchObject({ ok: false, stop: { exit: 1, reason: 'lock_compromised' } });
    expect(s.spool.lastSeq()).toBe(0);
  });

  it('a failed append is never retried: 1, spool_write_failed, and nothing is ledgered', () => {
    const s = open(fresh());
    s.spool.close();
    const r = s.ingest.run([delivery('ent_1')], arrived, s.ctx());
    expect(r).toMatchObject({ ok: false, stop: { exit: 1, reason: 'spool_write_failed', message: /Not retried/ } });
    s.ingest.commit();
    expect(s.ledger.pending()).toEqual([]);
  });

  it('on the principal leg, records carry the principal address and the ledger no session', () => {
    const s = open(fresh());
    const principal = { ...s.ctx(), leg: { leg: 'principal' as const } };
    s.ingest.run([delivery('ent_p', { to: 'agent:agt_me' })], { session: null, address: 'agent:agt_me' }, principal);
    s.ingest.commit();
    const [item] = s.spool.readAfter(0);
    expect(item!.record).toMatchObject({ type: 'entry', session: 'agent:agt_me' });
    expect(s.ledger.pending()).toEqual([{ id: 'ent_p', seq: 1, session: null, state: 'spooled' }]);
  });

  it('a rejection says what failed, that nothing was spooled or acked, and not to retry past it', () => {
    const s = open(fresh());
    const stale = { ...s.ctx(), nowMs: s.ctx().nowMs + 3_600_000 };
    const r = s.ingest.run([delivery('ent_old')], arrived, stale);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.stop.message).toMatch(
      /^entry ent_old failed verification \(replay_window\): .*a wrong local clock cannot be ruled out: compare this machine's time with a trusted source before treating this as tampering\. Nothing from this delivery was spooled or acknowledged: the Hub still holds it\. Possible tampering — tell a human; do not retry past it\.$/,
    );
    expect(s.logs).toEqual([r.stop.message]);
  });

  it('a compromised lock says another consumer may be draining', () => {
    const s = open(fresh());
    s.unhealthy();
    const r = s.ingest.run([delivery('ent_1')], arrived, s.ctx());
    expect(!r.ok && r.stop.message).toMatch(/^consumer\.lock was taken over while this consumer held it .*another consumer may be draining this entry$/);
  });

  it('a failed append says the Hub keeps what was not acknowledged', () => {
    const s = open(fresh());
    s.spool.close();
    const r = s.ingest.run([delivery('ent_1')], arrived, s.ctx());
    expect(!r.ok && r.stop.message).toMatch(
      / is closed\. Not retried: nothing more is acked, and every entry not yet acknowledged stays at the Hub and is redelivered to the next consumer, which recovers the spool first$/,
    );
  });

  it('commit is idempotent: a second commit writes nothing and changes nothing', () => {
    const s = open(fresh());
    s.ingest.run([delivery('ent_1')], arrived, s.ctx());
    s.ingest.commit();
    const ledgerFile = path.join(s.spool.dir, STATE_FILES.ledger);
    const before = readFileSync(ledgerFile, 'utf8');
    s.ingest.commit();
    expect(readFileSync(ledgerFile, 'utf8')).toBe(before);
    expect(s.ledger.pending().map((p) => p.id)).toEqual(['ent_1']);
  });

  it('on the principal leg a redelivery after a crash is ledgered with no session, as the first delivery would have been', () => {
    const dir = fresh();
    const first = open(dir);
    const principal = (o: ReturnType<typeof open>) => ({ ...o.ctx(), leg: { leg: 'principal' as const } });
    const p = { session: null, address: 'agent:agt_me' };
    first.ingest.run([delivery('ent_p', { to: 'agent:agt_me' })], p, principal(first));
    first.close();
    const next = open(dir);
    expect(next.ingest.run([delivery('ent_p', { to: 'agent:agt_me' })], p, principal(next))).toMatchObject({ ok: true, spooled: 0, redelivered: 1 });
    next.ingest.commit();
    expect(next.ledger.pending()).toEqual([{ id: 'ent_p', seq: 1, session: null, state: 'spooled' }]);
  });
});
