import { describe, expect, it } from 'vitest';
import type { HubCore } from '../../../src/hub/server/core.js';
import { presentStream, ShapedStatements, type Presenter, type Presenting } from '../../../src/hub/server/sessions.js';
import type { Param } from '../../../src/hub/server/sql.js';

type Values = { a: string; n: number | null };

describe('a statement made once per shape', () => {
  it('is built once per shape; every run binds its own values by name and keeps the constants', () => {
    const shaped = new ShapedStatements<Values>();
    let builds = 0;
    const build = (v: Values) => {
      builds += 1;
      return { sql: 'SELECT ? WHERE x = ? AND y = ? AND z = ?', params: [v.a, 7, v.n, v.a] as Param[] };
    };
    expect(shaped.bind('one', { a: 'first', n: 1 }, build)).toEqual({ sql: 'SELECT ? WHERE x = ? AND y = ? AND z = ?', params: ['first', 7, 1, 'first'] });
    expect(shaped.bind('one', { a: 'second', n: null }, build)).toEqual({
      sql: 'SELECT ? WHERE x = ? AND y = ? AND z = ?',
      params: ['second', 7, null, 'second'],
    });
    expect(builds).toBe(1);
    shaped.bind('two', { a: 'third', n: 3 }, build);
    expect(builds).toBe(2);
    expect(shaped.size).toBe(2);
  });

  it('refuses a builder that writes a value into the text (the text would be one run’s, reused by every other)', () => {
    const shaped = new ShapedStatements<Values>();
    expect(() => shaped.bind('inlined', { a: 'x', n: 1 }, (v) => ({ sql: `SELECT '${v.a}'`, params: [] }))).toThrow(/written into the statement's text/);
  });
});

describe("a stream connect's statement", () => {
  /** A store that records each statement and misses (no row: nothing is registered); a paged connect by token is batched (`onceTaken`). */
  const recording = () => {
    const runs: Array<{ sql: string; params: readonly Param[] }> = [];
    const store = {
      as: () => store,
      once: async (sql: string, params: readonly Param[]) => {
        runs.push({ sql, params });
        return [];
      },
      onceTaken: async (take: () => { sql: string; params: readonly Param[] }) => {
        runs.push(take());
        return [];
      },
    };
    const core = { store } as unknown as HubCore;
    return { core, runs };
  };
  const consumer = (pid: number) => ({ home: `/home/${pid}`, host: `host-${pid}`, pid });
  const presenting = (c: Presenting['consumer']): Presenting => ({ consumer: c, connect: true, stream: null });

  it('is the same text for every connect of one shape, with that connect’s own values bound', async () => {
    const { core, runs } = recording();
    const shapes: Array<[Presenter, Presenter, boolean, boolean]> = [
      [{ agentId: 'agt_1' }, { agentId: 'agt_2' }, false, false],
      [{ tokenHash: 'hash_1' }, { tokenHash: 'hash_2' }, false, false],
      [{ agentId: 'agt_1' }, { agentId: 'agt_2' }, true, false],
      [{ tokenHash: 'hash_1' }, { tokenHash: 'hash_2' }, true, true],
      [{ agentId: 'agt_1' }, { agentId: 'agt_2' }, false, true],
    ];
    for (const [one, two, withConsumer, paged] of shapes) {
      runs.length = 0;
      await presentStream(core, core.store, one, 'sess_1', presenting(withConsumer ? consumer(101) : null), paged ? { limit: 100, maxBytes: 5000 } : null);
      await presentStream(core, core.store, two, 'sess_2', presenting(withConsumer ? consumer(202) : null), paged ? { limit: 100, maxBytes: 6000 } : null);
      const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]];
      expect(b.sql).toBe(a.sql);
      const who = (p: Presenter) => ('agentId' in p ? p.agentId : p.tokenHash);
      expect(a.params).toContain(who(one));
      expect(b.params).toContain(who(two));
      expect(b.params).not.toContain(who(one));
      expect(a.params).toContain('sess_1');
      expect(b.params).toContain('sess_2');
      expect(b.params).not.toContain('sess_1');
      if (withConsumer) {
        expect(a.params).toEqual(expect.arrayContaining(['/home/101', 'host-101', 101]));
        expect(b.params).toEqual(expect.arrayContaining(['/home/202', 'host-202', 202]));
        expect(b.params).not.toContain(101);
      }
      if (paged) {
        expect(a.params).toContain(5000);
        expect(b.params).toContain(6000);
      }
      // The same parameters in the same places: only the values differ.
      expect(b.params.length).toBe(a.params.length);
      expect(b.sql.match(/\?(?!now\b)/g)?.length).toBe(b.params.length);
    }
  });

  it('differs between shapes: a token is let in by the statement, an agent id is compared', async () => {
    const { core, runs } = recording();
    await presentStream(core, core.store, { agentId: 'agt_1' }, 'sess_1', presenting(null), null);
    await presentStream(core, core.store, { tokenHash: 'hash_1' }, 'sess_1', presenting(null), null);
    await presentStream(core, core.store, { tokenHash: 'hash_1' }, 'sess_1', presenting(consumer(1)), null);
    const [byAgent, byToken, withConsumer] = runs.map((r) => r.sql) as [string, string, string];
    expect(byAgent).not.toContain('token_hash');
    expect(byToken).toContain('token_hash');
    expect(byToken).not.toContain('holder_pid = ?');
    expect(withConsumer).toContain('holder_pid = ?');
  });
});
