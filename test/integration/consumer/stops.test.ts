import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { consumerHome } from '../../../src/consumer/index.js';
import { selfStamp, sessionStateDir, stateKey } from '../../../src/spool/index.js';
import { runOhHai, startOhHai } from '../../helpers/cli.js';
import { useHub } from '../../helpers/world.js';
import { FAST_HUB, hubCall, useBenches, waitFor, type Bench } from './harness.js';
import { startFailAfterOpenProxy } from './sse-proxy.js';

/**
 * Every stop of the consumer, produced against a real Hub: each leaves state `stopped`,
 * its exit code and reason in consumer.json before the process exits with that code.
 */
const world = useBenches({ args: FAST_HUB, faults: true });

async function expectStop(b: Bench, p: ReturnType<Bench['start']>, exit: number, reason: string, message?: RegExp) {
  const { record, code } = await b.waitStopped(p);
  expect({ code, exit_code: record.exit_code, stop_reason: record.stop_reason }).toEqual({ code: exit, exit_code: exit, stop_reason: reason });
  expect(record.stopped_at).toBeGreaterThan(0);
  if (message) expect(record.stop_message).toMatch(message);
  return record;
}

describe('stops decided by the Hub', () => {
  it('401 (revoked credential) → 3', async () => {
    const bench = await world.bench();
    bench.settings();
    const revoked = await hubCall(world.hub, 'POST', `/v1/account/agents/${bench.me.id}/revoke`, { token: world.hub.humanToken, body: {} });
    expect(revoked.status).toBe(200);
    await expectStop(bench, bench.start(), 3, 'unauthorized', /401 unauthorized.*a human must fix the credential/);
  });

  it('messaging_disabled → 3, naming the setting', async () => {
    const bench = await world.bench();
    bench.settings();
    await hubCall(world.hub, 'PATCH', '/v1/account', { token: world.hub.humanToken, body: { agent_messaging: false } });
    try {
      await expectStop(bench, bench.start(), 3, 'messaging_disabled', /Settings → Agent messaging/);
    } finally {
      await hubCall(world.hub, 'PATCH', '/v1/account', { token: world.hub.humanToken, body: { agent_messaging: true } });
    }
  });

  it('session_held (another home drains the named session) → 10, naming the holder', async () => {
    const bench = await world.bench();
    bench.settings({ name: 'held-name' });
    const other = { 'ma2h-consumer': 'home=otherhome; host=other-host; pid=4242' };
    const created = await hubCall(world.hub, 'POST', '/v1/sessions', {
      token: bench.me.token,
      body: { client_key: 'k-other', name: 'held-name', home: 'otherhome', host: 'other-host', pid: 4242 },
    });
    expect(created.status).toBe(201);
    const drained = await hubCall(world.hub, 'GET', `/v1/inbox?session=${created.body.session.id}`, { token: bench.me.token, headers: other });
    expect(drained.status).toBe(200);
    await expectStop(bench, bench.start(), 10, 'session_held', /pid 4242 on host other-host.*Do not kill it/);
  });

  it('a pinned session that does not exist → 4', async () => {
    const bench = await world.bench();
    bench.settings({ pinned: 'sess_doesnotexist0000', name: null });
    await expectStop(bench, bench.start(), 4, 'session_not_found', /sess_doesnotexist0000 does not exist/);
  });

  it('closed by an operator while held → 14; a re-run is refused with 14 until the stop is lifted, then registers anew', async () => {
    const bench = await world.bench();
    bench.settings();
    const p = bench.start();
    await bench.waitRunning();
    const sid = bench.session()!.id;
    const closed = await hubCall(world.hub, 'POST', `/v1/sessions/${sid}/operator-close`, { token: world.hub.humanToken, body: {} });
    expect(closed.status).toBe(200);
    await expectStop(bench, p, 14, 'session_closed_by_operator', /kill-switch/);
    await expectStop(bench, bench.start(), 14, 'session_closed_by_operator', /do not start a replacement session until a human lifts the stop/);
    expect(bench.spool()).toEqual([]);

    const lifted = await hubCall(world.hub, 'POST', '/v1/operator-stops/lift', { token: world.hub.humanToken, body: { agent_id: bench.me.id } });
    expect(lifted.body.lifted).toBe(1);
    bench.start();
    await waitFor(() => (bench.consumer()?.state === 'running' && bench.session()?.id !== sid ? true : null), { what: 'a new session after the lift' });
    const next = bench.session()!;
    expect(next.history).toEqual([expect.objectContaining({ id: sid, reason: 'session_closed_by_operator' })]);
    expect(bench.spool()).toEqual([
      expect.objectContaining({
        seq: 1,
        type: 'transition',
        event: 'address_changed',
        from_session: sid,
        to_session: next.id,
        reason: 'session_closed_by_operator',
      }),
    ]);
  });

  it('closed by the agent (oh-hai session close) → 15', async () => {
    const bench = await world.bench();
    bench.settings();
    const p = bench.start();
    await bench.waitRunning();
    const closed = await hubCall(world.hub, 'POST', `/v1/sessions/${bench.session()!.id}/close`, { token: bench.me.token, body: {} });
    expect(closed.status).toBe(200);
    await expectStop(bench, p, 15, 'session_closed', /stood the session down/);
  });

  it('replaced by another consumer of the same home → stops quietly with 0, reason replaced', async () => {
    const bench = await world.bench();
    bench.settings();
    const p = bench.start();
    await bench.waitRunning();
    const sid = bench.session()!.id;
    const successor = new AbortController();
    const res = await fetch(`${world.hub.url}/v1/inbox/stream?session=${sid}`, {
      headers: {
        authorization: `Bearer ${bench.me.token}`,
        accept: 'text/event-stream',
        'ma2h-consumer': `home=${consumerHome(bench.dir)}; host=h; pid=999999`,
      },
      signal: successor.signal,
    });
    expect(res.status).toBe(200);
    try {
      await expectStop(bench, p, 0, 'replaced', /took the session over/);
    } finally {
      successor.abort();
    }
  });

  it('503s back off with jitter and end in 13 once the budget is spent', async () => {
    const bench = await world.bench();
    bench.settings({ max_retries: 3 });
    const p = bench.start();
    await bench.waitRunning();
    await world.hub.faults([{ class: 'stream', action: 'status', status: 503 }]);
    await expectStop(bench, p, 13, 'unreachable', /4 attempts failed in a row.*503/);
    const retries = bench
      .log()
      .split('\n')
      .filter((l) => /retry \d of 3/.test(l));
    expect(retries.map((l) => /retry (\d) of 3/.exec(l)![1])).toEqual(['1', '2', '3']);
  });

  it('a successful connect refills the budget: isolated 503s never add up to 13', async () => {
    const bench = await world.bench();
    bench.settings({ max_retries: 1 });
    const p = bench.start();
    await bench.waitRunning();
    for (let i = 0; i < 3; i += 1) {
      await world.hub.faults([{ class: 'stream', action: 'status', status: 503, count: 1 }]);
      await waitFor(
        () =>
          bench
            .log()
            .split('\n')
            .filter((l) => l.includes('retry 1 of 1')).length > i,
        { what: `fault ${i + 1} met` },
      );
      // The next fault only once a connect has succeeded since: that success is what refills the budget.
      const after = Date.now();
      await waitFor(() => bench.session()!.renewed_at > after, { what: `reconnected after fault ${i + 1}` });
    }
    expect(p.exitCode).toBeNull();
    expect(bench.consumer()!.state).toBe('running');
  });

  it.each([
    ['an unknown reconnect reason', 'event: reconnect\ndata: {"reason":"x-hostile"}\n\n', /unknown reason "x-hostile"/],
    ['a drop', '', /dropped mid-hold/],
    ['an event the client refuses', 'event: entries\ndata: {not json}\n\n', /not JSON/],
  ])('a Hub that fails every stream right after open (%s) reaches 13: open does not refill the budget', async (_what, after, last) => {
    const proxy = await startFailAfterOpenProxy(world.hub.url, after);
    try {
      const bench = await world.bench();
      bench.settings({ hub: proxy.url, max_retries: 3 });
      await expectStop(bench, bench.start(), 13, 'unreachable', new RegExp(`4 attempts failed in a row.*${last.source}`));
      expect(
        bench
          .log()
          .split('\n')
          .filter((l) => /retry \d of 3/.test(l))
          .map((l) => /retry (\d) of 3/.exec(l)![1]),
      ).toEqual(['1', '2', '3']);
    } finally {
      await proxy.close();
    }
  });

  it('a stream dropped mid-hold is a fault and is reconnected', async () => {
    const bench = await world.bench();
    bench.settings();
    const p = bench.start();
    await bench.waitRunning();
    await world.hub.faults([{ class: 'stream', action: 'drop', count: 2 }]);
    // Depending on where the socket dies, the client sees a bare end of stream or a reset: both are faults.
    await waitFor(
      () =>
        bench
          .log()
          .split('\n')
          .filter((l) => /stream.*(dropped mid-hold|network error).*retry \d/.test(l)).length === 2,
      {
        what: 'both drops logged as faults',
      },
    );
    const id = await bench.notify('after the drops');
    await waitFor(async () => (await bench.track(id)).state === 'delivered', { what: 'delivery after reconnecting' });
    expect(bench.entries().filter((e) => e.entry?.text === 'after the drops')).toHaveLength(1);
    expect(p.exitCode).toBeNull();
  });
});

describe('stops decided by the consumer', () => {
  it('unattended: no reader for unattended_max_seconds → stops with 0 and leaves the session open', async () => {
    const bench = await world.bench();
    bench.settings({ unattended_max_seconds: 0.8 });
    const p = bench.start();
    await bench.waitRunning();
    const sid = bench.session()!.id;
    await expectStop(bench, p, 0, 'unattended', /no reader has attended.*without closing the session/);
    const s = await hubCall(world.hub, 'GET', `/v1/sessions/${sid}`, { token: bench.me.token });
    expect(s.body.session.state).toBe('active');
  });

  it('an attending reader keeps it running past the bound; when the process that started the reader is gone, it stops', async () => {
    const bench = await world.bench();
    bench.settings({ unattended_max_seconds: 0.8 });
    const starter = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    await waitFor(() => selfStamp(starter.pid!).start_time !== null, { what: 'the starter running' });
    const stamp = selfStamp(starter.pid!);
    bench.attend({ starterPid: stamp.pid });
    const p = bench.start();
    await bench.waitRunning();
    const started = Date.now();
    // Keep the reader's heartbeat fresh while its starter lives.
    const b = bench;
    const beat = setInterval(() => b.attend({ starterPid: stamp.pid, starterStartTime: stamp.start_time }), 100);
    try {
      await waitFor(() => Date.now() - started > 2500, { what: 'well past the bound', timeoutMs: 10_000 });
      expect(bench.consumer()!.state).toBe('running');
      starter.kill('SIGKILL');
      await new Promise((r) => starter.once('exit', r));
      await expectStop(bench, p, 0, 'unattended', /started the reader \(pid \d+\) no longer exists/);
    } finally {
      clearInterval(beat);
      starter.kill('SIGKILL');
    }
  });

  it('--mode direct has no unattended bound, logs to stderr too, and a SIGTERM is a clean stop with 0', async () => {
    const bench = await world.bench();
    bench.settings({ unattended_max_seconds: 0.5 });
    const p = bench.start(['--mode', 'direct']);
    let stderr = '';
    p.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    await bench.waitRunning();
    const started = Date.now();
    await waitFor(() => Date.now() - started > 2000, { what: 'well past the bound', timeoutMs: 10_000 });
    expect(bench.consumer()).toMatchObject({ state: 'running', mode: 'direct' });
    p.kill('SIGTERM');
    await expectStop(bench, p, 0, 'signal', /SIGTERM/);
    expect(stderr).toMatch(/oh-hai __consumer: registered session sess_/);
  });

  it('a second consumer on the same entry refuses, names the holder, and leaves its record alone (0 auto, 10 direct)', async () => {
    const bench = await world.bench();
    bench.settings();
    const first = bench.start();
    const rec = await bench.waitRunning();
    const auto = await bench.runToEnd();
    expect(auto.code).toBe(0);
    expect(bench.log()).toMatch(new RegExp(`refused to start: another consumer already drains this entry \\(pid ${rec.pid} on`));
    const direct = await bench.runToEnd(['--mode', 'direct']);
    expect(direct.code).toBe(10);
    expect(direct.stderr).toMatch(new RegExp(`pid ${rec.pid}`));
    expect(bench.consumer()).toMatchObject({ pid: rec.pid, state: 'running' });
    expect(first.exitCode).toBeNull();
  });

  it('a pre-0.5 Hub is refused with 2, naming its version', async () => {
    const old = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ protocol: 'MA2H', version: '0.4.2', inbound: { session_param: false } }));
    });
    await new Promise<void>((r) => old.listen(0, '127.0.0.1', r));
    try {
      const bench = await world.bench();
      bench.settings({ hub: `http://127.0.0.1:${(old.address() as AddressInfo).port}` });
      await expectStop(bench, bench.start(), 2, 'hub_unsupported', /MA2H 0\.4\.2; oh-hai needs 0\.5\.0/);
    } finally {
      old.closeAllConnections();
      await new Promise((r) => old.close(r));
    }
  });
});

describe('leases', () => {
  const lapsing = useHub({ args: [...FAST_HUB, '--lease-min-seconds', '1', '--lease-default-seconds', '1.5'], faults: true });

  const lapsed = async (b: Bench, sid: string) =>
    waitFor(async () => (await hubCall(lapsing.hub, 'GET', `/v1/sessions/${sid}`, { token: b.me.token })).body.session.state === 'lapsed', {
      what: `${sid} lapsed`,
    });

  it('records every renewal: the Hub instant verbatim and our clock', async () => {
    const bench = await world.bench({ on: lapsing.hub });
    bench.settings();
    bench.start();
    await bench.waitRunning();
    const a = bench.session()!;
    await waitFor(() => bench.session()!.expires_at !== a.expires_at, { what: 'a renewal' });
    const b = bench.session()!;
    expect(b.renewed_at).toBeGreaterThan(a.renewed_at);
    expect(b.lease_seconds).toBe(1.5);
    const hubView = await hubCall(lapsing.hub, 'GET', `/v1/sessions/${b.id}`, { token: bench.me.token });
    expect(Date.parse(hubView.body.session.expires_at)).toBeGreaterThanOrEqual(Date.parse(b.expires_at));
  });

  it('unpinned: a lapse while running is replaced by a new session under the same name, with an address_changed record', async () => {
    const bench = await world.bench({ on: lapsing.hub });
    bench.settings({ name: 'lapse-live' });
    const p = bench.start();
    await bench.waitRunning();
    const before = bench.session()!;
    // Hold the next connect past the lease: the session lapses before it is presented.
    await lapsing.hub.faults([{ class: 'stream', action: 'delay', delay_ms: 2500, count: 1 }]);
    await waitFor(() => bench.session()!.id !== before.id, { what: 'a new session', timeoutMs: 15_000 });
    const after = bench.session()!;
    expect(after.name).toBe('lapse-live');
    expect(after.history).toEqual([expect.objectContaining({ id: before.id, address: before.address, reason: 'session_lapsed' })]);
    expect(bench.spool().filter((l) => l.type === 'transition')).toEqual([
      expect.objectContaining({ event: 'address_changed', from_session: before.id, to_session: after.id, reason: 'session_lapsed' }),
    ]);
    expect(p.exitCode).toBeNull();
    await bench.notify('to the new address');
    await waitFor(() => bench.entries().some((e) => e.entry?.text === 'to the new address' && e.session === after.id), { what: 'delivery on the new session' });
  });

  it('unpinned: a consumer restarted after its lease lapsed registers anew and records the address change; records from the old session are acked without it', async () => {
    const bench = await world.bench({ on: lapsing.hub });
    bench.settings({ name: 'lapse-restart' });
    const first = bench.start();
    await bench.waitRunning();
    const old = bench.session()!;
    const id = await bench.notify('arrived under the old session');
    await waitFor(async () => (await bench.track(id)).state === 'delivered', { what: 'delivered under the old session' });
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    await lapsed(bench, old.id);
    bench.start();
    await waitFor(() => bench.session()!.id !== old.id && bench.consumer()!.state === 'running', { what: 'running on a new session' });
    const transition = bench.spool().find((l) => l.type === 'transition');
    expect(transition).toMatchObject({ from_session: old.id, to_session: bench.session()!.id, reason: 'session_lapsed' });
    expect(bench.ledgerLive()).toEqual([bench.entries()[0]!.entry!.id]);
    bench.advanceCursor(2);
    await waitFor(() => bench.ledgerLive().length === 0, { what: 'the old record acknowledged' });
    expect(bench.log()).not.toMatch(/ack \w+ on sess_.*HTTP 410/);
    expect(bench.consumer()!.state).toBe('running');
  });

  it('pinned: a lapsed session → 11', async () => {
    const bench = await world.bench({ on: lapsing.hub });
    const created = await hubCall(lapsing.hub, 'POST', '/v1/sessions', { token: bench.me.token, body: { client_key: 'pin-me', lease_seconds: 1 } });
    const sid = created.body.session.id as string;
    await lapsed(bench, sid);
    bench.settings({ pinned: sid, name: null });
    await expectStop(bench, bench.start(), 11, 'session_lapsed', new RegExp(`pinned session ${sid} is terminal`));
  });

  it('pinned: an active session is drained as is, and never replaced', async () => {
    const bench = await world.bench({ on: lapsing.hub });
    // A lease of its own, not this Hub's 1.5 s default: on a loaded machine the connection's start
    // alone can outlast 1.5 s, and the session would lapse before it is first presented.
    const created = await hubCall(lapsing.hub, 'POST', '/v1/sessions', { token: bench.me.token, body: { client_key: 'pin-live', lease_seconds: 60 } });
    const sid = created.body.session.id as string;
    bench.settings({ pinned: sid, name: null });
    bench.start();
    await bench.waitRunning();
    expect(bench.session()).toMatchObject({ id: sid, pinned: true });
  });
});

describe('refusals before draining', () => {
  it('unattended_max_seconds ≤ 0 is a usage error (2): it never disabled the bound', async () => {
    const bench = await world.bench();
    bench.settings({ unattended_max_seconds: 0 });
    await expectStop(bench, bench.start(), 2, 'bad_settings', /unattended_max_seconds is 0: it must be greater than 0/);
  });

  it('no settings.json → 2, naming the file and who writes it', async () => {
    const bench = await world.bench();
    await expectStop(bench, bench.start(), 2, 'bad_settings', /settings\.json: it does not exist; the reader writes it/);
  });

  it('a credential for another agent than the entry names → 3', async () => {
    const bench = await world.bench();
    bench.settings({ agent_id: 'agt_someone_else' });
    await expectStop(bench, bench.start(), 3, 'credential_mismatch', /acts as agent agt_\w+, but this state entry belongs to agent agt_someone_else/);
  });

  it('--entry with resolution flags, or neither --entry nor a direct --session, is a usage error and writes nothing', async () => {
    const bench = await world.bench();
    const both = await bench.runToEnd(['--hub', world.hub.url]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--entry takes every setting from the entry's settings\.json; drop --hub/);
    const r = await runOhHai(['__consumer'], { env: bench.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--mode direct --session <name>/);
    expect(bench.consumer()).toBeNull();
  });
});

describe('--mode direct --session (a service manager resolves nothing for it)', () => {
  it('resolves its own entry from flags, config and environment, writes settings.json, and drains under the session name', async () => {
    const bench = await world.bench();
    const p = startOhHai(['__consumer', '--mode', 'direct', '--session', 'svc-1', '--transport', 'poll', '--interval', '0.2'], {
      env: { ...bench.env, MA2H_HUB_URL: world.hub.url },
    });
    bench.procs.push(p);
    let stderr = '';
    p.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const dir = sessionStateDir(path.join(bench.temp.root, 'state'), stateKey(world.hub.url, bench.me.id, 'svc-1'));
    const read = (name: string) => {
      try {
        return JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
      } catch {
        return null;
      }
    };
    const rec = await waitFor(() => (read('consumer.json')?.state === 'running' ? read('consumer.json') : null), { what: 'the direct consumer running' });
    expect(rec).toMatchObject({ mode: 'direct', transport: 'poll' });
    expect(read('settings.json')).toMatchObject({ name: 'svc-1', session_key: 'svc-1', transport: 'poll', interval_seconds: 0.2 });
    expect(read('session.json')).toMatchObject({ name: 'svc-1' });
    p.kill('SIGTERM');
    const code = await new Promise((r) => p.once('exit', r));
    expect(code).toBe(0);
    expect(read('consumer.json')).toMatchObject({ state: 'stopped', exit_code: 0, stop_reason: 'signal' });
    // One stop, one line in a unit's journal (stderr); bridge.log keeps its own.
    expect(stderr.split('\n').filter((l) => l.includes('SIGTERM'))).toEqual([expect.stringMatching(/^oh-hai __consumer: stopped \(signal\): .*SIGTERM/)]);
    expect(readFileSync(path.join(dir, 'bridge.log'), 'utf8')).toMatch(/consumer stopped: exit 0 \(signal\) — .*SIGTERM/);
  });
});
