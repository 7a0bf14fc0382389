import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCall, type TestHub } from '../../helpers/hub.js';
import { startPair, type Pair } from '../../helpers/cluster.js';
import { findNginx, type Balancer } from '../../helpers/nginx.js';
import { sql } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { agent, bridge, stateDirOf, registered, sessionIdOf, spooledEntries, stopConsumers, type Agent } from '../bridge/world.js';
import { openSse, type SseConn } from '../hub/sse.js';

// Two Hub instances on one PostgreSQL database, behind the shipped nginx config: the
// database decides (holder rule), NOTIFY carries wake-ups between instances (and a cut
// listener costs no delivery), and a kill -9 of an instance loses and doubles nothing.

const noNginx = findNginx() === null ? 'nginx is not installed (Debian: apt-get install nginx; .ci/postgres.sh installs it)' : null;
if (noNginx !== null) console.log(`skipping the cluster tests: ${noNginx}`);

/** A stream hold far above every wait below: a delivery seen in time was pushed, not picked up by a reconnect. */
const HOLD_SECONDS = 60;
const ARGS = ['--stream-max-hold-seconds', String(HOLD_SECONDS), '--lease-min-seconds', '1', '--keepalive-seconds', '0.5', '--admin-listen', '127.0.0.1:0'];
/** Well under the hold: what must arrive without a reconnect. */
const PUSH_DEADLINE_MS = 15_000;

describe.skipIf(noNginx !== null)('two Hub instances on one PostgreSQL, behind nginx', () => {
  let pair: Pair, db: Pair['db'], a: TestHub, b: TestHub, lb: Balancer;
  beforeAll(async () => void ({ db, a, b, lb } = pair = await startPair({ args: ARGS, env: { OH_HAI_HUB_LISTEN_RETRY_MS: '300' } })));
  afterAll(() => pair?.dispose());

  const adminUrl = (h: TestHub): string => {
    const all = [...h.output().stdout.matchAll(/^hub: admin \(healthz, readyz, metrics\) at (\S+)$/gm)];
    return all[all.length - 1]![1]!;
  };
  const openStreams = async (h: TestHub): Promise<number> => {
    const text = await (await fetch(`${adminUrl(h)}/metrics`)).text();
    return Number(/^oh_hai_hub_open_streams (\d+)$/m.exec(text)?.[1] ?? 'NaN');
  };
  const session = async (h: TestHub, token: string, body: Record<string, unknown> = {}) => {
    const r = await hubCall(h, 'POST', '/v1/sessions', { token, body: { client_key: `k-${Math.random()}`, lease_seconds: 120, ...body } });
    expect(r.status, r.text).toBe(201);
    return r.body.session as { id: string; address: string };
  };
  const send = (h: TestHub | Balancer, token: string, to: string, text: string) =>
    hubCall(h, 'POST', '/v1/messages', { token, body: { to, intent: 'notify', text } });
  const entriesOn = (c: SseConn): string[] =>
    c.events.filter((e) => e.event === 'entries').flatMap((e) => (JSON.parse(e.data).messages as { entry: { text: string } }[]).map((d) => d.entry.text));

  it('shares one account and answers ready on both instances; the password never reaches a log', async () => {
    for (const h of [a, b]) {
      const ready = await fetch(`${adminUrl(h)}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ ok: true, store: 'postgres' });
      const password = new URL(db.url).password;
      expect(password.length).toBeGreaterThan(8);
      expect(h.output().stdout + h.output().stderr).not.toContain(password);
      expect(h.output().stdout).toMatch(/^hub: store PostgreSQL postgres:\/\/oh_hai:\*\*\*@127\.0\.0\.1:\d+\/oh_hai_\w+$/m);
    }
    const who = await hubCall(lb, 'GET', '/v1/whoami', { token: a.humanToken });
    expect(who.status).toBe(200);
    expect(b.output().stdout).not.toMatch(/created account/);
  });

  it('pushes a message accepted by one instance to a stream held on the other, and again after its listener is cut from SQL', async () => {
    const sender = await a.mintAgent('cluster-sender');
    const recipient = await a.mintAgent('cluster-recipient');
    const s = await session(b, recipient.token);
    const stream = await openSse(`${b.url}/v1/inbox/stream?session=${s.id}`, { token: recipient.token });
    expect(stream.status).toBe(200);
    await stream.next((e) => e.event === 'open');
    expect((await send(a, sender.token, s.address, 'across instances')).status).toBe(202);
    await waitFor(() => entriesOn(stream).includes('across instances'), { timeoutMs: PUSH_DEADLINE_MS, what: 'the push from the other instance' });

    // Cut every listener of this deployment from the database side; send while they are down.
    const cut = await sql<{ ok: boolean }>(
      db.url,
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'oh-hai-hub-listen' AND datname = current_database()`,
    );
    expect(cut.length).toBe(2);
    expect((await send(a, sender.token, s.address, 'while the listener was down')).status).toBe(202);
    await waitFor(() => entriesOn(stream).includes('while the listener was down'), {
      timeoutMs: PUSH_DEADLINE_MS,
      what: 'delivery after the listener was cut',
    });
    // The same connection took it: no hold bound passed, no reconnect.
    expect(stream.events.filter((e) => e.event === 'reconnect' || e.event === 'closed')).toEqual([]);
    await waitFor(() => /the database listener working again/.test(b.output().stderr), { what: "instance B's listener to come back" });
    expect(b.output().stderr).toMatch(/the database listener failed: dropped/);
    // And NOTIFY works again after the re-open.
    expect((await send(a, sender.token, s.address, 'after the re-open')).status).toBe(202);
    await waitFor(() => entriesOn(stream).includes('after the re-open'), { timeoutMs: PUSH_DEADLINE_MS, what: 'the push after the listener came back' });
    stream.close();
  });

  it('lets exactly one of two consumers racing for a session on two instances hold it; the other gets session_held', async () => {
    const owner = await a.mintAgent('cluster-racer');
    for (let round = 0; round < 5; round++) {
      const s = await session(a, owner.token);
      const connect = (h: TestHub, home: string) =>
        openSse(`${h.url}/v1/inbox/stream?session=${s.id}`, {
          token: owner.token,
          headers: { 'ma2h-consumer': `home=${home}; host=box-${home}; pid=${100 + round}` },
        });
      const [x, y] = await Promise.all([connect(a, `home-one-${round}`), connect(b, `home-two-${round}`)]);
      const statuses = [x.status, y.status].sort();
      expect(statuses, `round ${round}: ${x.errorBody} ${y.errorBody}`).toEqual([200, 409]);
      const refused = x.status === 409 ? x : y;
      expect(JSON.parse(refused.errorBody).error.code).toBe('session_held');
      x.close();
      y.close();
    }
  });

  describe('a bridge streaming through the balancer from one instance, a sender on the other, under load', () => {
    let ag: Agent;
    afterAll(async () => {
      if (ag) {
        await stopConsumers(ag);
        ag.temp.cleanup();
      }
    });
    const streamsEnded = async (h: TestHub): Promise<number> => {
      const text = await (await fetch(`${adminUrl(h)}/metrics`)).text();
      return [...text.matchAll(/^oh_hai_hub_requests_total\{route="\/v1\/inbox\/stream",status="\d+"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };

    it('takes every message of a 20-wide burst once, on the stream it holds: pushed, not picked up by a reconnect (push p50/p99 printed)', async () => {
      const balanced: TestHub = { ...a, url: lb.url };
      ag = await agent(balanced);
      const dir = stateDirOf(ag, balanced, 'under-load');
      expect((await bridge(ag, 'under-load', ['--wait', '0'])).code).toBe(0);
      const sess = await registered(dir);
      const holder = await waitFor(async () => ((await openStreams(a)) === 1 ? a : (await openStreams(b)) === 1 ? b : null), {
        what: 'the bridge stream on one instance',
      });
      const other = holder === a ? b : a;
      const sender = await other.mintAgent('load-sender');
      const ended = [await streamsEnded(a), await streamsEnded(b)];

      const N = 200;
      const WIDE = 20;
      const sentAt = new Map<string, number>();
      let next = 0;
      await Promise.all(
        Array.from({ length: WIDE }, async () => {
          while (next < N) {
            const i = next++;
            const t = Date.now();
            const r = await send(other, sender.token, `agent:${ag.id}#${sess}`, `load ${i}`);
            expect(r.status, r.text).toBe(202);
            sentAt.set(r.body.message.id as string, t);
          }
        }),
      );
      const spooled = () => spooledEntries(dir);
      await waitFor(
        () => {
          const n = spooled().length;
          if (n < N) throw new Error(`${n} spooled; bridge.log:\n${readFileSync(path.join(dir, 'bridge.log'), 'utf8').slice(-3000)}`);
          return true;
        },
        { timeoutMs: PUSH_DEADLINE_MS * 3, what: `${N} entries spooled` },
      );
      const got = spooled();
      expect(got.length, 'an entry spooled twice').toBe(N);
      expect(got.map((g) => g.messageId).sort()).toEqual([...sentAt.keys()].sort());
      // No stream of either instance ended during the burst: every entry came down the one held stream.
      expect([await streamsEnded(a), await streamsEnded(b)]).toEqual(ended);
      expect(await openStreams(holder)).toBe(1);
      expect(await openStreams(other)).toBe(0);

      const waits = got.map((g) => g.receivedAt - sentAt.get(g.messageId)!).sort((x, y) => x - y);
      const at = (q: number): number => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!;
      console.log(
        `cluster push under load (${N} sends, ${WIDE} in flight, sender on one instance, stream through nginx on the other): send → spooled p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (a figure, not a bound)`,
      );
    });
  });

  describe('kill -9 of the instance a bridge streams from, during a burst', () => {
    let ag: Agent;
    afterAll(async () => {
      if (ag) {
        await stopConsumers(ag);
        ag.temp.cleanup();
      }
    });

    it('keeps the bridge on its session through the balancer: every accepted message spooled once, none lost', async () => {
      const balanced: TestHub = { ...a, url: lb.url };
      ag = await agent(balanced);
      const dir = stateDirOf(ag, balanced, 'failover');
      expect((await bridge(ag, 'failover', ['--wait', '0'])).code).toBe(0);
      const sess = await registered(dir);
      const holder = await waitFor(async () => ((await openStreams(a)) === 1 ? a : (await openStreams(b)) === 1 ? b : null), {
        what: 'the bridge stream on one instance',
      });
      const other = holder === a ? b : a;
      const sender = await other.mintAgent('burst-sender');

      const N = 60;
      const accepted: string[] = [];
      for (let i = 0; i < N; i++) {
        if (i === 20) await holder.kill('SIGKILL');
        const r = await send(other, sender.token, `agent:${ag.id}#${sess}`, `burst ${i}`);
        expect(r.status, r.text).toBe(202);
        accepted.push(r.body.message.id as string);
      }
      const spooledIds = (): string[] => spooledEntries(dir).map((e) => e.messageId);
      await waitFor(() => spooledIds().length >= N, { timeoutMs: 45_000, what: `${N} entries spooled` });
      const ids = spooledIds();
      expect(ids.length, 'an entry spooled twice').toBe(N);
      expect([...ids].sort()).toEqual([...accepted].sort());
      // The same session, and its address, throughout.
      expect(sessionIdOf(dir)).toBe(sess);
      expect(await openStreams(other)).toBe(1);
      await holder.restart();
    });
  });
});
