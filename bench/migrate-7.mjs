// How long schema migration 7 (every text column COLLATE "C"; entries_claimed replaced by the partial
// entries_claims) keeps an upgrading Hub from serving, on a large database, and what it blocks meanwhile.
// Builds a database at schema 6 holding N messages and N entries shaped as a fleet's mailboxes (many
// agents, a few sessions each; session mail and principal mail, some of it claimed; entries acknowledged,
// pending and expired as the Hub leaves them; bodies as canonical JSON), vacuumed and analyzed as
// autovacuum leaves a live database, then times the real migration path through the dist build:
// - PostgreSQL: dist's migrate(), the function `hub serve` calls at start (postgres/index.ts), on a
//   client as the Hub's pool opens it, each of its statements timed (migration 7 is ONE multi-statement
//   query there, so it is one figure); a second instance calling migrate() 200 ms later (how long it
//   waits on the advisory lock); a sampler every 50 ms of pg_locks (from when the migration holds each
//   table exclusively, and every lock another backend waits for; PostgreSQL 15 reports no index progress for
//   the rebuilds an ALTER TABLE makes). Then, on a copy of the same database, migration 7's text split into its statements and run
//   one by one in one transaction (per-statement times). Then, on another copy, migrate() again while
//   probes play an instance of the previous version still serving (--fleet): a credential read
//   (agents), a stream page (entries), a lease renewal (sessions), a send (sessions FOR KEY SHARE,
//   messages, entries: one transaction) and an ack (entries then messages, as inbox.ts and track.ts
//   write it: one transaction), each in a loop 50 ms apart: how long each waited, and any error
//   (a deadlock is one: the ack takes entries then messages; until session 20 the migration took messages
//   then entries, one ALTER at a time). Since session 20 migrate() takes all its tables first, within half
//   of deadlock_timeout, and tries again: the run prints its tries and how long taking the tables took.
//   With --old-hub <a build of schema 6>, that build's `hub serve` also runs on this database through the
//   migration: its /readyz and /healthz asked in a loop 50 ms apart, and GET /v1/whoami (its credential
//   read, which waits for meta) sent every 50 ms without waiting for the one before, as a fleet's
//   requests come: how long each waited and what it answered, before and after the migration committed; and
//   (since session 21) a sender posting a message every 50 ms with its idempotency key, each sent again after a
//   refusal (its Retry-After) until accepted, then every key looked up: in the database once, with one entry.
//   For the refusals of session 21 the old Hub must be a build with them at schema 6: this branch with
//   SCHEMA_VERSION set to 6 in postgres/schema.ts (docs/deploy.md, "(session 21, ready21)").
// - SQLite: a store made by dist's openStore with the schema-6 index (entries_claimed) put back, the
//   same rows, then dist's openStore() timed (what `hub serve` runs at start: its schema text, whose
//   only work on such a file is the index swap); nothing else can use the file meanwhile (the Hub
//   holds it exclusively).
// Prints the databases' sizes, every time, and the load (/proc/loadavg) beside them.
// The PostgreSQL cluster is the throwaway one of .ci/postgres.sh (fsync=off, full_page_writes=off: the
// index builds' final flush to disk is not in these times) unless OH_HAI_BENCH_DATABASE_URL names an
// admin URL. Needs `npm run build`. Never run by CI.
// Usage: flock /work/.bench.lock node bench/migrate-7.mjs [--entries 1000000] [--agents 2000]
//          [--sessions 5 (per agent)] [--only postgres,sqlite] [--no-alone] [--no-split] [--no-fleet] [--keep (the databases)]
//          [--build <dir> (whose dist's migrate() and openStore() to time; default: this checkout's)]
//          [--old-hub <dir> [--old-hub-sweeps]]   (a build at schema 6, e.g. a worktree of fced4ab with `npm run build`: on the --fleet run;
//          its leases and pending mail are made current first, unless --old-hub-sweeps: then its first expiry sweep holds entries)
//          [--maintenance-work-mem 256MB [--reverse]]   (the real path run twice, at the server's setting and then — --reverse: first —
//          at this one for the migrating sessions, as an operator's ALTER ROLE … SET would give it)
// (each --no-… leaves out one of PostgreSQL's three runs above, to keep a run under the bench lock short)
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { hubReady } from './bridge-world.mjs';
import { adminUrlOrRerun, opt } from './pg-ab.mjs';

const ONLY = String(opt('only', 'postgres,sqlite')).split(',');
const admin = ONLY.includes('postgres') ? adminUrlOrRerun('bench/migrate-7.mjs') : null;
const N = Number(opt('entries', 1_000_000));
const AGENTS = Number(opt('agents', 2000));
const SESSIONS = AGENTS * Number(opt('sessions', 5));
const ALONE = !process.argv.includes('--no-alone');
const SPLIT = !process.argv.includes('--no-split');
const FLEET = !process.argv.includes('--no-fleet');
const KEEP = process.argv.includes('--keep');
const OLD_HUB = opt('old-hub', null);
// The migrating sessions' maintenance_work_mem (what an operator's ALTER ROLE … SET would give the Hub's role), e.g. 256MB.
const MWM = opt('maintenance-work-mem', null);
const BATCH = 100_000;
const T0 = Date.parse('2026-11-01T00:00:00Z');

// --build <dir>: another build's migrate() (e.g. /work/wt/base20, the one before session 20's fix), for a pair.
const BUILD = path.resolve(String(opt('build', path.join(import.meta.dirname, '..'))));
const { MIGRATIONS, migrate } = await import(path.join(BUILD, 'dist/hub/server/postgres/schema.js'));
const { openStore } = await import(path.join(BUILD, 'dist/hub/server/store.js'));

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const ms = (t) => `${(performance.now() - t).toFixed(0)} ms`;
const mb = (bytes) => `${(bytes / 1048576).toFixed(0)} MB`;
const say = (line) => console.log(`${line}   [load ${load()}]`);

// The rows, in one dialect-free shape: `g` is the row's number; every id is a prefix and 24 hex digits
// (ids.ts newId), scattered as random ids are. `hex(expr)` is the dialect's 12 hex digits of an integer.
const rowsOf = (hex) => {
  const id = (prefix, g, salt) => `'${prefix}_' || ${hex(`(${g}) * 2654435761 + ${salt}`)} || ${hex(`(${g}) * 40503 + ${salt * 7919}`)}`;
  const agent = (g) => id('agt', g, 1);
  const session = (g) => id('sess', g, 2);
  // Message g goes to session g % SESSIONS (of agent g % SESSIONS % AGENTS) or, one in five, to that
  // agent's principal mailbox, half of which a session of it claimed; it comes from another agent.
  const s = `(g % ${SESSIONS})`;
  const to = `(${s} % ${AGENTS})`;
  const from = `((g * 31 + 7) % ${AGENTS})`;
  const principal = `g % 5 = 0`;
  const claimed = `g % 10 = 0`;
  const toAddr = `'agent:' || ${agent(to)} || CASE WHEN ${principal} THEN '' ELSE '#' || ${session(s)} END`;
  // The newest 3 % still pending, one in fifty expired, the rest acknowledged.
  const state = `CASE WHEN g >= ${Math.floor(N * 0.97)} THEN 'pending' WHEN g % 50 = 1 THEN 'expired' ELSE 'acknowledged' END`;
  const at = `(${T0} + g * 40)`;
  const text = `'status of task ' || g || ': the build passed on all targets; the flaky test in the consumer suite needs a look before the next release, details in the log'`;
  return {
    agents: `SELECT ${agent('g')}, 'agent ' || g, ${id('tok', 'g', 3)} || ${id('', 'g', 4)}, 0, ${T0} FROM series`,
    presence: `SELECT ${agent('g')}, ${T0} FROM series`,
    sessions: `SELECT ${session('g')}, ${agent(`g % ${AGENTS}`)}, 'worker-' || (g / ${AGENTS}), ${id('ck', 'g', 5)}, '/home/agent' || (g % ${AGENTS}),
                 CASE WHEN g % 10 = 9 THEN 'closed' ELSE 'active' END, 60, ${T0} + 86400000, ${T0}, ${T0} - g,
                 CASE WHEN g % 10 = 9 THEN ${T0} ELSE NULL END, ${T0}, '/home/agent' || (g % ${AGENTS}), 'host-' || (g % 50), 1000 + g, ${T0}, ${T0} FROM series`,
    messages: `SELECT ${id('msg', 'g', 6)}, CASE WHEN g % 4 = 0 THEN 'ask' ELSE 'notify' END, 'agent:' || ${agent(from)}, ${agent(from)}, NULL,
                 ${toAddr}, ${agent(to)}, CASE WHEN ${principal} THEN NULL ELSE ${session(s)} END, ${text}, NULL, ${at},
                 CASE WHEN g >= ${Math.floor(N * 0.97)} THEN 'queued' WHEN g % 50 = 1 THEN 'expired' ELSE 'acknowledged' END, 'delivered',
                 '[{"state":"queued","at":"2026-11-01T00:00:00.000Z"},{"state":"delivered","at":"2026-11-01T00:00:00.040Z"},{"state":"acknowledged","at":"2026-11-01T00:00:01.120Z"}]',
                 CASE WHEN ${principal} THEN '{"kind":"principal","reachability":"online"}' ELSE '{"kind":"session","reachability":"online"}' END,
                 CASE WHEN g % 8 = 0 THEN ${id('msg', 'g', 8)} ELSE NULL END, CASE WHEN g % 8 = 0 THEN 'done' ELSE NULL END, CASE WHEN g % 8 = 0 THEN ${at} + 5000 ELSE NULL END,
                 CASE WHEN g % 2 = 0 THEN ${id('idem', 'g', 9)} ELSE NULL END, CASE WHEN g % 2 = 0 THEN ${id('', 'g', 10)} || ${id('', 'g', 11)} ELSE NULL END FROM series`,
    entries: `SELECT ${id('ent', 'g', 12)}, 'message',
                 '{"created_at":"2026-11-01T00:00:00.000Z","from":"agent:' || ${agent(from)} || '","id":"' || ${id('ent', 'g', 12)} || '","intent":"notify","kind":"message","message_id":"' || ${id('msg', 'g', 6)} || '","text":' || '"' || ${text} || '","to":"' || ${toAddr} || '"}',
                 ${agent(to)}, CASE WHEN ${principal} THEN NULL ELSE ${session(s)} END, CASE WHEN ${claimed} THEN ${session(s)} ELSE NULL END,
                 ${id('msg', 'g', 6)}, ${at}, CASE WHEN g >= ${Math.floor(N * 0.97)} THEN 0 ELSE 1 END, ${state}, 1 FROM series`,
  };
};

const COLUMNS = {
  agents: 'id, label, token_hash, revoked, created_at',
  principal_presence: 'agent_id, seen_at',
  sessions:
    'id, agent_id, name, client_key, home, state, lease_seconds, expires_at, last_renewed_at, created_at, closed_at, seen_at, holder_home, holder_host, holder_pid, holder_since, holder_seen_at',
  messages:
    'id, intent, from_addr, from_agent, reply_session, to_addr, to_agent, to_session, text, in_reply_to, created_at, state, prior, track, destination, response_id, response_text, response_at, idempotency_key, request_hash',
  entries: 'id, kind, body, to_agent, to_session, claimed_session, message_id, created_at, delivered, state, canonical',
};

/** Every table's INSERT … SELECT over rows lo..hi-1 of `series`, in `withSeries(lo, hi)`'s dialect. */
function* inserts(hex, withSeries) {
  const rows = rowsOf(hex);
  yield ['agents', withSeries(0, AGENTS, `INSERT INTO agents (${COLUMNS.agents}) ${rows.agents}`)];
  yield ['principal_presence', withSeries(0, AGENTS, `INSERT INTO principal_presence (${COLUMNS.principal_presence}) ${rows.presence}`)];
  yield ['sessions', withSeries(0, SESSIONS, `INSERT INTO sessions (${COLUMNS.sessions}) ${rows.sessions}`)];
  for (let lo = 0; lo < N; lo += BATCH) {
    const hi = Math.min(N, lo + BATCH);
    yield [`messages ${lo}..${hi}`, withSeries(lo, hi, `INSERT INTO messages (${COLUMNS.messages}) ${rows.messages}`)];
    yield [`entries ${lo}..${hi}`, withSeries(lo, hi, `INSERT INTO entries (${COLUMNS.entries}) ${rows.entries}`)];
  }
}

if (ONLY.includes('postgres')) await postgres();
if (ONLY.includes('sqlite')) await sqlite();

async function postgres() {
  const { default: pg } = await import('pg');
  const urlOf = (db) => Object.assign(new URL(admin), { pathname: `/${db}` }).toString();
  const connect = async (db, name = 'oh-hai-bench', options = undefined) => {
    const c = new pg.Client({ connectionString: urlOf(db), application_name: name, options });
    await c.connect();
    return c;
  };
  const root = new pg.Client({ connectionString: admin });
  await root.connect();
  const tag = randomBytes(4).toString('hex');
  const made = [];
  const create = async (db, template) => {
    await root.query(`CREATE DATABASE ${db}${template ? ` TEMPLATE ${template} STRATEGY FILE_COPY` : ''}`);
    made.push(db);
  };
  const version = (await root.query('SHOW server_version')).rows[0].server_version;
  const migrating = MWM === null ? undefined : `-c maintenance_work_mem=${MWM}`;
  console.log(
    `PostgreSQL ${version}, ${N.toLocaleString('en')} messages and entries, ${AGENTS} agents, ${SESSIONS} sessions${MWM === null ? '' : `; the migrating sessions' maintenance_work_mem ${MWM}`}`,
  );

  // The schema-6 database, as a Hub of the previous version left it (migrate's own bookkeeping at 6).
  const base = `oh_hai_mig6_${tag}`;
  await create(base);
  let c = await connect(base);
  let t = performance.now();
  await c.query('CREATE TABLE oh_hai_schema (version INTEGER NOT NULL)');
  for (const m of MIGRATIONS.slice(0, 6)) await c.query(m);
  await c.query('INSERT INTO oh_hai_schema (version) VALUES (6)');
  await c.query(`INSERT INTO meta (key, value) VALUES ('account_id', 'acct_0123456789abcdef01234567'), ('human_token_hash', '${'ab'.repeat(32)}')`);
  const hex = (e) => `lpad(to_hex(((${e}) % 281474976710655)::bigint), 12, '0')`;
  for (const [what, text] of inserts(hex, (lo, hi, q) => q.replace(/ FROM series/g, ` FROM generate_series(${lo}::bigint, ${hi - 1}) AS g`))) {
    const t1 = performance.now();
    await c.query(text);
    if (!what.startsWith('messages') || what.endsWith(`..${N}`) || Number(what.split(' ')[1].split('..')[0]) % 500_000 === 0)
      say(`  built ${what} (${ms(t1)})`);
  }
  await c.query(
    `INSERT INTO operator_stops (agent_id, client_key, name, session_id, created_at) SELECT id, client_key, name, id, ${T0} FROM sessions LIMIT 100`,
  );
  await c.query(
    `INSERT INTO web_sessions (id_hash, sealed, last_seen_at, created_at) SELECT md5('w' || g) || md5('x' || g), repeat('s', 200), ${T0}, ${T0} FROM generate_series(1, 50) AS g`,
  );
  await c.query('VACUUM (ANALYZE)');
  await c.query('CHECKPOINT');
  const sizes = async (cl) =>
    Object.fromEntries(
      (
        await cl.query(
          `SELECT 'database' AS k, pg_database_size(current_database()) AS v UNION ALL
           SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN ('entries', 'messages', 'entries_claimed', 'entries_claims')`,
        )
      ).rows.map((r) => [r.k, Number(r.v)]),
    );
  const before = await sizes(c);
  say(
    `schema-6 database built in ${ms(t)}: ${mb(before.database)} (entries with its indexes ${mb(before.entries)}, messages ${mb(before.messages)}, entries_claimed ${mb(before.entries_claimed)})`,
  );
  await c.end();

  // 1. The real path, alone: how long an upgrading instance is not ready, and what a second one waits. With
  // --maintenance-work-mem, twice on two copies: the server's setting, then the given one (a same-run pair; --reverse:
  // the given one first).
  for (const [i, setting] of (ALONE
    ? MWM === null
      ? [undefined]
      : process.argv.includes('--reverse')
        ? [migrating, undefined]
        : [undefined, migrating]
    : []
  ).entries()) {
    const db = `oh_hai_mig7a${i}_${tag}`;
    await create(db, base);
    const first = await connect(db, 'oh-hai-hub', setting);
    const second = await connect(db, 'oh-hai-hub-second');
    const sampler = await samplerOn(await connect(db, 'oh-hai-bench-sampler'));
    await first.query('SET plan_cache_mode = force_generic_plan');
    const steps = [];
    const timed = {
      query: async (text, params) => {
        const t1 = performance.now();
        try {
          return await first.query(text, params);
        } finally {
          steps.push([text.trim().split('\n')[0].slice(0, 70), performance.now() - t1]);
        }
      },
    };
    // Whether a table is rewritten (a new file) and how much WAL the migration writes: what a server with
    // fsync on (this throwaway cluster's is off) must also put on disk before its COMMIT returns.
    const files = async () =>
      (await first.query(`SELECT relname, relfilenode FROM pg_class WHERE relname IN ('entries', 'messages') ORDER BY relname`)).rows
        .map((r) => `${r.relname} ${r.relfilenode}`)
        .join(', ');
    const wal = async () => (await first.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn;
    const [filesBefore, walBefore] = [await files(), await wal()];
    const loadAt = load();
    const t1 = performance.now();
    const running = migrate(timed).then((r) => ({ r, ms: performance.now() - t1 }));
    await sleep(200);
    const t2 = performance.now();
    const other = await migrate(second).then((r) => ({ r, ms: performance.now() - t2 }));
    const mine = await running;
    await sampler.stop();
    const mem = (await first.query('SHOW maintenance_work_mem')).rows[0].maintenance_work_mem;
    console.log(`\nPostgreSQL, the real path (dist migrate(), as \`hub serve\` runs it), maintenance_work_mem ${mem}, load at its start ${loadAt}:`);
    console.log(`  migrate() ${JSON.stringify(mine.r)}: ${mine.ms.toFixed(0)} ms`);
    for (const [text, took] of steps) console.log(`    ${took.toFixed(1).padStart(9)} ms  ${text}`);
    console.log(`  a second instance's migrate() started 200 ms later: ${JSON.stringify(other.r)} after ${other.ms.toFixed(0)} ms (on the advisory lock)`);
    sampler.report();
    const walBytes = (await first.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS n', [walBefore])).rows[0].n;
    console.log(`  table files before: ${filesBefore}; after: ${await files()}; WAL written: ${mb(Number(walBytes))}`);
    const after = await sizes(first);
    say(`  after: ${mb(after.database)} (entries ${mb(after.entries)}, entries_claims ${mb(after.entries_claims)})`);
    for (const cl of [first, second]) await cl.end();
  }

  // 2. Migration 7's statements one by one, in one transaction, on another copy.
  if (SPLIT) {
    const db = `oh_hai_mig7b_${tag}`;
    await create(db, base);
    const cl = await connect(db, 'oh-hai-bench', migrating);
    const statements = MIGRATIONS[6]
      .split(/;\s*\n/)
      .map((s) => s.trim())
      .filter(Boolean);
    console.log(`\nPostgreSQL, migration 7 statement by statement in one transaction (load ${load()}):`);
    await cl.query('BEGIN');
    for (const s of statements) {
      const t1 = performance.now();
      await cl.query(s);
      console.log(`  ${ms(t1).padStart(9)}  ${s.replace(/\s+/g, ' ').slice(0, 90)}`);
    }
    const t1 = performance.now();
    await cl.query('COMMIT');
    say(`  ${ms(t1).padStart(9)}  COMMIT`);
    await cl.end();
  }

  // 3. The real path while an instance of the previous version keeps serving.
  if (FLEET) {
    const db = `oh_hai_mig7c_${tag}`;
    await create(db, base);
    const hub = OLD_HUB === null ? null : await oldHub(db, urlOf(db));
    const probes = await oldInstance(db, connect);
    await sleep(500);
    // Named apart from the schema-6 Hub's pool (oh-hai-hub), so the sampler tells them apart.
    const first = await connect(db, 'oh-hai-hub-migrating', migrating);
    // The time migrate() spends taking the migration's tables (its `SAVEPOINT taking; … LOCK TABLE` statements), and
    // from its start to the migration's text (every table held).
    const taking = { ms: 0, held: null, lines: [] };
    let t1 = 0;
    const client = {
      query: async (text, params) => {
        const t = performance.now();
        if (text === MIGRATIONS[6]) taking.held ??= t - t1;
        try {
          return await first.query(text, params);
        } finally {
          if (text.startsWith('SAVEPOINT taking')) taking.ms += performance.now() - t;
        }
      },
    };
    const sampler = await samplerOn(await connect(db, 'oh-hai-bench-sampler'), 'oh-hai-hub-migrating');
    const loadAt = load();
    // As systemd's unit runs it (Restart=on-failure, RestartSec=1): a failed start is tried again a second later.
    const attempts = [];
    for (let i = 0; i < 4 && attempts.at(-1)?.ok !== true; i++) {
      if (i > 0) await sleep(1000);
      t1 = performance.now();
      attempts.push(
        await migrate(client, { log: (line) => taking.lines.push(`${(performance.now() - t1).toFixed(0)} ms: ${line}`) }).then(
          (r) => ({ ok: true, text: JSON.stringify(r), ms: performance.now() - t1 }),
          (e) => ({ ok: false, text: `FAILED: ${e.code ?? ''} ${e.message}`, ms: performance.now() - t1 }),
        ),
      );
    }
    probes.migrated();
    hub?.migrated();
    await sleep(1000);
    await sampler.stop();
    const seen = await probes.stop();
    console.log(`\nPostgreSQL, the real path while the previous version serves (probes 50 ms apart), load at its start ${loadAt}:`);
    for (const a of attempts) console.log(`  migrate(): ${a.text} after ${a.ms.toFixed(0)} ms`);
    console.log(
      `    taking its tables: ${taking.ms.toFixed(0)} ms in all; every table held ${taking.held === null ? 'never' : `${taking.held.toFixed(0)} ms after the last migrate()'s start`}; ${taking.lines.length} tries found a table held`,
    );
    for (const line of taking.lines) console.log(`      ${line}`);
    sampler.report();
    for (const [name, p] of Object.entries(seen))
      console.log(
        `  ${name.padEnd(8)} ${String(p.count).padStart(4)} done, longest ${p.max.toFixed(0).padStart(6)} ms, over 100 ms: ${p.slow}${p.errors.length ? `, ${p.errors.length} errors (${p.failedAfter} of the ${p.after} calls after the migration): ${[...new Set(p.errors)].join('; ')}` : ''}`,
      );
    if (hub !== null) await hub.stop();
    say('  (end)');
    await first.end();
  }

  if (!KEEP) for (const db of made.reverse()) await root.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await root.end();
}

/**
 * Every 50 ms: the tables the migration (`app`) holds exclusively (and its advisory lock), every lock another backend
 * waits for, and every transaction left idle for over 200 ms with its last statement (a holder the migration waits for).
 */
async function samplerOn(cl, app = 'oh-hai-hub') {
  const t0 = performance.now();
  const held = new Map(); // `${app} ${mode} ${rel}` -> first ms
  const waits = new Map(); // `${app} waits ${mode} ${rel}` -> [first, last]
  const idle = new Map(); // `${app}: ${last statement}` -> [first, last, longest open]
  let on = true;
  const loop = (async () => {
    while (on) {
      const at = performance.now() - t0;
      const locks = await cl.query(
        `SELECT a.application_name AS app, l.mode, l.granted, coalesce(c.relname, l.relation::text, l.locktype) AS rel
           FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid LEFT JOIN pg_class c ON c.oid = l.relation
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND l.locktype IN ('relation', 'advisory')
            AND (NOT l.granted OR l.locktype = 'advisory' OR (c.relkind = 'r' AND l.mode = 'AccessExclusiveLock'))`,
      );
      for (const l of locks.rows) {
        if (l.granted && l.app === app) {
          const k = `${l.mode} ${l.rel}`;
          if (!held.has(k)) held.set(k, at);
        } else if (!l.granted) {
          const k = `${l.app} waits for ${l.mode} on ${l.rel}`;
          waits.set(k, [waits.get(k)?.[0] ?? at, at]);
        }
      }
      const open = await cl.query(
        `SELECT application_name AS app, regexp_replace(left(query, 110), '\\s+', ' ', 'g') AS q, extract(epoch FROM now() - xact_start) * 1000 AS ms
           FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND xact_start < now() - interval '200 ms'`,
      );
      for (const o of open.rows) {
        const k = `${o.app}: ${o.q}`;
        const was = idle.get(k);
        idle.set(k, [was?.[0] ?? at, at, Math.max(was?.[2] ?? 0, Number(o.ms))]);
      }
      await sleep(50);
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      await cl.end();
    },
    report() {
      console.log('  sampled every 50 ms (ms from the sampler start):');
      for (const [k, first] of [...held].sort((a, b) => a[1] - b[1])) console.log(`    the migration holds ${k} from ${first.toFixed(0)}`);
      for (const [k, [first, last]] of waits) console.log(`    ${k}: seen ${first.toFixed(0)}..${last.toFixed(0)}`);
      for (const [k, [first, last, longest]] of idle)
        console.log(`    idle in transaction over 200 ms, ${k}: seen ${first.toFixed(0)}..${last.toFixed(0)}, open up to ${longest.toFixed(0)} ms`);
    },
  };
}

/** An instance of schema 6's code at work: each probe its own connection, in a loop 50 ms apart. */
async function oldInstance(db, connect) {
  const picks = await (async () => {
    const cl = await connect(db);
    const r = await cl.query(
      `SELECT e.id AS entry, e.message_id AS message, e.to_session AS session, e.to_agent AS agent, a.token_hash AS token
         FROM entries e JOIN agents a ON a.id = e.to_agent WHERE e.to_session IS NOT NULL ORDER BY e.seq DESC LIMIT 200`,
    );
    await cl.end();
    return r.rows;
  })();
  const pick = () => picks[Math.floor(Math.random() * picks.length)];
  let n = 0;
  const probes = {
    auth: (cl, p) => cl.query({ name: 'auth', text: 'SELECT id, revoked FROM agents WHERE token_hash = $1', values: [p.token] }),
    page: (cl, p) =>
      cl.query({
        name: 'page',
        text: `SELECT seq, body FROM entries WHERE to_session = $1 AND state = 'pending' AND seq > 0 ORDER BY seq LIMIT 50`,
        values: [p.session],
      }),
    renewal: (cl, p) =>
      cl.query({ name: 'renewal', text: 'UPDATE sessions SET last_renewed_at = $2, seen_at = $2 WHERE id = $1', values: [p.session, Date.now()] }),
    send: async (cl, p) => {
      await cl.query('BEGIN');
      try {
        await cl.query('SELECT 1 FROM sessions WHERE id = $1 FOR KEY SHARE', [p.session]);
        const id = `msg_probe_${process.pid}_${n++}`;
        await cl.query(
          `INSERT INTO messages (id, intent, from_addr, to_addr, to_agent, to_session, text, created_at, state, track, destination)
           VALUES ($1, 'notify', 'agent:x', 'agent:y', $2, $3, 'probe', 0, 'queued', '[]', '{}')`,
          [id, p.agent, p.session],
        );
        await cl.query(
          `INSERT INTO entries (id, kind, body, to_agent, to_session, message_id, created_at, state) VALUES ($1, 'message', '{}', $2, $3, $4, 0, 'pending')`,
          [`ent_probe_${process.pid}_${n++}`, p.agent, p.session, id],
        );
        await cl.query('COMMIT');
      } catch (e) {
        await cl.query('ROLLBACK');
        throw e;
      }
    },
    ack: async (cl, p) => {
      await cl.query('BEGIN');
      try {
        await cl.query(`UPDATE entries SET delivered = 1, state = 'acknowledged' WHERE id = $1`, [p.entry]);
        await cl.query(`UPDATE messages SET state = 'acknowledged', prior = 'delivered' WHERE id = $1`, [p.message]);
        await cl.query('COMMIT');
      } catch (e) {
        await cl.query('ROLLBACK');
        throw e;
      }
    },
  };
  let on = true;
  let migrated = false;
  const seen = {};
  const loops = await Promise.all(
    Object.entries(probes).map(async ([name, run]) => {
      const cl = await connect(db, `oh-hai-hub-previous-${name}`);
      await cl.query('SET plan_cache_mode = force_generic_plan');
      const s = (seen[name] = { count: 0, max: 0, slow: 0, errors: [], after: 0, failedAfter: 0 });
      // Wrapped: a promise returned from an async function is adopted, and Promise.all would wait for the loop.
      return {
        done: (async () => {
          while (on) {
            const t = performance.now();
            const late = migrated;
            try {
              await run(cl, pick());
            } catch (e) {
              s.errors.push(`${e.code ?? ''} ${e.message}`);
              if (late) s.failedAfter++;
            }
            if (late) s.after++;
            const took = performance.now() - t;
            s.count++;
            s.max = Math.max(s.max, took);
            if (took > 100) s.slow++;
            await sleep(50);
          }
          await cl.end();
        })(),
      };
    }),
  );
  return {
    /** From now on a call is counted as one made after the migration committed. */
    migrated() {
      migrated = true;
    },
    async stop() {
      on = false;
      await Promise.all(loops.map((l) => l.done));
      return seen;
    },
  };
}

/**
 * The schema-6 build's `hub serve` on `url`, and its probes: /readyz and /healthz in a loop 50 ms apart, and
 * GET /v1/whoami every 50 ms without waiting (so they pile up as a fleet's requests would). Its own human token:
 * the bench's fake hash is removed first, so the Hub makes one.
 */
async function oldHub(db, url) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`DELETE FROM meta WHERE key = 'human_token_hash'`);
  // The fleet's leases run a day from the rows' instant, weeks ago: without this the Hub's first sweep closes them all.
  await c.query(`UPDATE sessions SET expires_at = $1 WHERE state = 'active'`, [Date.now() + 86_400_000]);
  // And its pending mail is weeks past the message TTL: the Hub's first expiry sweep would expire all of it (3 %)
  // in one transaction, holding entries for its whole length (session 20: 45 s here). --old-hub-sweeps keeps it so.
  if (!process.argv.includes('--old-hub-sweeps')) await c.query(`UPDATE entries SET created_at = $1 WHERE state = 'pending'`, [Date.now()]);
  await c.end();
  const data = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-mig7-old-'));
  const proc = spawn(process.execPath, [path.join(OLD_HUB, 'bin', 'oh-hai'), 'hub', 'serve', '--port', '0', '--data', data, '--admin-listen', '127.0.0.1:0'], {
    env: { ...process.env, OH_HAI_HUB_DATABASE_URL: url, MA2H_SIGNING_KEY: randomBytes(16).toString('hex') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.setEncoding('utf8').on('data', (d) => (out += d));
  const base = await hubReady(proc);
  const admin = /^hub: admin \(healthz, readyz, metrics\) at (\S+)$/m.exec(out)?.[1];
  const human = readFileSync(path.join(data, 'human-token'), 'utf8').trim();
  const t0 = performance.now();
  let migratedAt = null;
  let on = true;
  const calls = { readyz: [], healthz: [], whoami: [], send: [] };
  const reasons = new Set();
  const call = async (name, href, headers) => {
    const t = performance.now();
    const [status, text] = await fetch(href, { headers, signal: AbortSignal.timeout(60_000) }).then(
      async (r) => [r.status, await r.text()],
      (e) => [e.name, ''],
    );
    if (status !== 200) reasons.add(`${name} ${status} ${text.slice(0, 160)}`);
    calls[name].push({ at: t - t0, ms: performance.now() - t, status, after: migratedAt !== null && t >= migratedAt });
  };
  const closedLoop = async (name, href) => {
    while (on) {
      await call(name, href);
      await sleep(50);
    }
  };
  const loops = [closedLoop('readyz', `${admin}/readyz`), closedLoop('healthz', `${admin}/healthz`)];
  // A sender as a bridge sends: one message every 50 ms, each with its idempotency key, sent again (Retry-After, else 1 s)
  // until it is accepted — then every key must be in the database exactly once: nothing lost, nothing doubled.
  const postJson = async (href, token, body) => {
    const r = await fetch(href, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return r.json();
  };
  const sender = await postJson(`${base}/v1/account/agents`, human, { label: 'bench-sender' });
  const reader = await postJson(`${base}/v1/account/agents`, human, { label: 'bench-reader' });
  const { session } = await postJson(`${base}/v1/sessions`, reader.token, { client_key: 'bench-reader', lease_seconds: 3600 });
  const keys = [];
  const accepted = new Set();
  const sendUntilAccepted = async (key) => {
    for (let tries = 1; tries <= 120; tries++) {
      const t = performance.now();
      const [status, retryAfter] = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sender.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: session.address, intent: 'notify', text: key, idempotency_key: key }),
        signal: AbortSignal.timeout(60_000),
      }).then(
        async (r) => [r.status, r.headers.get('retry-after'), await r.text()],
        (e) => [e.name, null],
      );
      calls.send.push({ at: t - t0, ms: performance.now() - t, status, after: migratedAt !== null && t >= migratedAt });
      if (status === 202 || status === 200) return accepted.add(key);
      await sleep(retryAfter === null ? 1000 : Number(retryAfter) * 1000);
    }
  };
  const inFlight = new Set();
  const open = (async () => {
    while (on) {
      const p = call('whoami', `${base}/v1/whoami`, { authorization: `Bearer ${human}` });
      const key = `bench-${keys.length}`;
      keys.push(key);
      const s = sendUntilAccepted(key);
      for (const x of [p, s]) {
        inFlight.add(x);
        x.finally(() => inFlight.delete(x));
      }
      await sleep(50);
    }
    await Promise.all(inFlight);
  })();
  say(`  the schema-6 build's hub serve (${OLD_HUB}) serving on this database, pid ${proc.pid}`);
  return {
    migrated() {
      migratedAt = performance.now();
    },
    async stop() {
      on = false;
      await Promise.all([...loops, open]);
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(data, { recursive: true, force: true });
      console.log(`  the schema-6 Hub (ms from its probes' start; the migration committed at ${(migratedAt - t0).toFixed(0)}):`);
      for (const [name, list] of Object.entries(calls))
        for (const [when, part] of [
          ['before', list.filter((x) => !x.after)],
          ['after', list.filter((x) => x.after)],
        ]) {
          const statuses = {};
          for (const x of part) statuses[x.status] = (statuses[x.status] ?? 0) + 1;
          const slow = part.filter((x) => x.ms > 100);
          const longest = part.reduce((m, x) => (x.ms > m.ms ? x : m), { ms: 0, at: 0 });
          console.log(
            `    ${name.padEnd(7)} asked ${when.padEnd(6)} the commit: ${String(part.length).padStart(4)}, answers ${JSON.stringify(statuses)}, longest ${longest.ms.toFixed(0)} ms (asked at ${longest.at.toFixed(0)}), over 100 ms: ${slow.length}${slow.length ? ` (asked ${slow[0].at.toFixed(0)}..${slow.at(-1).at.toFixed(0)})` : ''}`,
          );
        }
      for (const r of reasons) console.log(`    answered: ${r}`);
      const { default: pg } = await import('pg');
      const check = new pg.Client({ connectionString: url });
      await check.connect();
      const stored = await check.query(
        `SELECT m.idempotency_key AS key, count(*)::int AS n, count(e.id)::int AS entries
           FROM messages m LEFT JOIN entries e ON e.message_id = m.id WHERE m.from_agent = $1 GROUP BY 1`,
        [sender.agent.id],
      );
      await check.end();
      const inDb = new Map(stored.rows.map((r) => [r.key, r]));
      const missing = [...accepted].filter((k) => !inDb.has(k));
      const doubled = stored.rows.filter((r) => r.n !== 1 || r.entries !== 1);
      console.log(
        `    sends: ${keys.length} keys, ${accepted.size} accepted (${calls.send.length} tries), ${inDb.size} in the database; accepted but missing: ${missing.length}; not exactly one message and one entry: ${doubled.length}; never accepted: ${keys.length - accepted.size}`,
      );
      const logged = out.split('\n').filter((l) => /cannot|fail|error|stale|schema/i.test(l));
      if (logged.length) console.log(`    its log: ${[...new Set(logged)].slice(0, 8).join(' | ')}`);
    },
  };
}

async function sqlite() {
  const { openSqlite } = await import('../dist/hub/server/sqlite-driver.js');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-mig7-'));
  const file = path.join(dir, 'hub.sqlite');
  console.log(`\nSQLite, ${N.toLocaleString('en')} messages and entries, ${AGENTS} agents, ${SESSIONS} sessions (${dir})`);
  let t = performance.now();
  // The store as a Hub made it, with schema 6's index of claims put back.
  openStore(dir).close();
  const db = openSqlite(file);
  db.pragma('journal_mode = WAL');
  db.exec('DROP INDEX entries_claims; CREATE INDEX entries_claimed ON entries (claimed_session, state, seq)');
  const hex = (e) => `printf('%012x', (${e}) % 281474976710655)`;
  const withSeries = (lo, hi, q) => `WITH RECURSIVE series(g) AS (SELECT ${lo} UNION ALL SELECT g + 1 FROM series WHERE g < ${hi - 1}) ${q}`;
  for (const [what, text] of inserts(hex, withSeries)) {
    db.exec(`BEGIN; ${text}; COMMIT`);
    if (what.startsWith('entries') && what.endsWith(`..${N}`)) say(`  built ${what}`);
  }
  db.exec('ANALYZE; PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  const size = () => statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0);
  say(`schema-6 store built in ${ms(t)}: ${mb(size())}`);
  const loadAt = load();
  t = performance.now();
  const opened = openStore(dir);
  const took = ms(t);
  const indexes = opened
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'entries_claim%'`)
    .all()
    .map((r) => r.name);
  opened.close();
  console.log(`SQLite, the real path (dist openStore(), as \`hub serve\` runs it), load at its start ${loadAt}:`);
  say(`  openStore(): ${took}; indexes now ${indexes.join(', ')}; ${mb(size())}`);
  if (!KEEP) rmSync(dir, { recursive: true, force: true });
}
