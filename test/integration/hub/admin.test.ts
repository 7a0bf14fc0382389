import { existsSync, readFileSync, statSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOhHai, startOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

// The admin commands a person runs against their own Hub, through the real CLI.
describe('oh-hai hub admin commands', () => {
  let hub: TestHub;
  let t: TempEnv;
  const admin = (...args: string[]) => runOhHai(['hub', ...args, '--data', hub.dataDir], { env: t.env });

  beforeAll(async () => {
    hub = await startHub();
    t = tempEnv();
  });
  afterAll(async () => {
    await hub.dispose();
    t.cleanup();
  });

  it('mints an agent and prints its token once; lists and revokes agents', async () => {
    const add = await admin('agent', 'add', 'builder');
    expect(add.code, add.stderr).toBe(0);
    const id = /minted agent (agt_\S+)/.exec(add.stdout)![1]!;
    const token = /token \(shown once[^:]*\): (\S+)/.exec(add.stdout)![1]!;
    expect((await hubCall(hub, 'GET', '/v1/whoami', { token })).body.agent.id).toBe(id);
    const ls = await admin('agent', 'ls');
    expect(ls.stdout).toContain(`${id}\tbuilder\tactive\taccount`);
    const json = await admin('agent', 'ls', '--json');
    expect(JSON.parse(json.stdout)).toContainEqual({ id, label: 'builder', revoked: false, source: 'account' });
    const revoke = await admin('agent', 'revoke', id);
    expect(revoke.code).toBe(0);
    expect((await hubCall(hub, 'GET', '/v1/whoami', { token })).status).toBe(401);
    const again = await admin('agent', 'add', 'builder');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
    const twin = await admin('agent', 'add', 'builder');
    expect(twin.code, twin.stderr).toBe(0);
    const first = /minted agent (agt_\S+)/.exec(again.stdout)![1]!;
    expect(twin.stderr).toMatch(
      new RegExp(`^oh-hai hub agent add: ⚠️ agent:${first} already has the label "builder": a send or directive --to builder is now refused as ambiguous`),
    );
    const unknown = await admin('agent', 'revoke', 'agt_nobody');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/FATAL \(exit 2, agent_not_found\) — .*agt_nobody.*; oh-hai hub agent ls lists the agents of this account$/m);
    const noSession = await admin('session', 'close', 'sess_nobody');
    expect(noSession.code).toBe(2);
    expect(noSession.stderr).toMatch(
      /FATAL \(exit 2, session_not_found\) — .*sess_nobody.*; the web inbox's Fleet page \(http:\/\/\S+\/fleet\) lists the live sessions/,
    );
  });

  it('sends a directive, closes a session as the operator and lifts the stop', async () => {
    const agent = await hub.mintAgent('worker');
    const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'ck', name: 'run-1' } })).body.session;
    const d = await admin('directive', '--to', s.address, 'Run', 'the', 'tests.');
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/queued directive msg_\S+ to agent:/);
    const drained = await hubCall(hub, 'GET', `/v1/inbox?session=${s.id}`, { token: agent.token });
    expect(drained.body.messages[0].entry).toMatchObject({ kind: 'directive', text: 'Run the tests.' });

    const close = await admin('session', 'close', s.id);
    expect(close.code, close.stderr).toBe(0);
    expect(close.stdout).toMatch(/closed_by_operator/);
    expect(close.stdout).toContain(`oh-hai hub lift --agent ${agent.id} --name run-1`);
    expect((await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'ck' } })).status).toBe(403);
    const toClosed = await admin('directive', '--to', s.address, 'too late');
    expect(toClosed.code).toBe(2);
    expect(toClosed.stderr).toMatch(/FATAL \(exit 2, session_closed_by_operator\) — .*; address the agent itself \(agent:<id>, without #sess_…\)/);
    const toNoRun = await admin('directive', '--to', `agent:${agent.id}#sess_nobody`, 'to no run');
    expect(toNoRun.code).toBe(2);
    expect(toNoRun.stderr).toMatch(/FATAL \(exit 2, recipient_not_found\) — .*; oh-hai hub agent ls lists the agents; the web inbox's Fleet page/);
    const lift = await admin('lift', '--agent', agent.id);
    expect(lift.stdout).toMatch(/lifted 1 operator stop/);
    expect(lift.stdout).toContain('its next oh-hai bridge registers a new session (a new address) by itself');
    expect((await hubCall(hub, 'POST', '/v1/sessions', { token: agent.token, body: { client_key: 'ck' } })).status).toBe(201);
    // Again, with nothing left to lift: an answer (exit 0) that says so, never "lifted 0 … it may register again".
    const again = await admin('lift', '--agent', agent.id, '--name', 'run-1');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`^nothing was lifted: agent ${agent.id} has no operator stop matching --name run-1 — .*; nothing changed$`, 'm'));
    expect(again.stdout).not.toMatch(/lifted 0|may register/);

    const bad = await admin('directive', '--to', 'bob', 'hi');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--to/);
  });

  it('lift and revoke given a label say it is one and which id to pass, rather than "no agent"', async () => {
    const one = await hub.mintAgent('lifter');
    const lift = await admin('lift', '--agent', 'lifter', '--name', 'run-1');
    expect(lift.code).toBe(2);
    expect(lift.stderr).toMatch(
      new RegExp(
        `^oh-hai hub lift: FATAL \\(exit 2, label_for_id\\) — "lifter" is a label, not an agent id: it labels agent ${one.id}; run oh-hai hub lift --agent ${one.id} --name run-1$`,
        'm',
      ),
    );
    const a = await hub.mintAgent('pair');
    const b = await hub.mintAgent('pair');
    const revoke = await admin('agent', 'revoke', 'pair');
    expect(revoke.code).toBe(2);
    expect(revoke.stderr).toContain(
      `"pair" is a label, not an agent id: it labels agent ${a.id} and agent ${b.id}; it is shared, so run oh-hai hub agent revoke <id> with the one you mean`,
    );
    expect((await hubCall(hub, 'GET', '/v1/whoami', { token: a.token })).status).toBe(200);
  });

  it('switches messaging off and on', async () => {
    const off = await admin('messaging', 'off');
    expect(off.stdout).toMatch(/agent messaging is off/);
    expect((await hubCall(hub, 'GET', '/v1/account', { token: hub.humanToken })).body.account.agent_messaging).toBe(false);
    const on = await admin('messaging', 'on');
    expect(on.stdout).toMatch(/agent messaging is on/);
    expect((await admin('messaging', 'maybe')).code).toBe(2);
  });

  it('says what is wrong when there is no token or no Hub', async () => {
    const noData = await runOhHai(['hub', 'agent', 'ls'], { env: t.env });
    expect(noData.code).toBe(3);
    expect(noData.stderr).toMatch(/no human token at .*oh-hai\/hub\/human-token/);
    const down = await runOhHai(['hub', 'agent', 'ls', '--data', hub.dataDir, '--hub', 'http://127.0.0.1:9'], { env: t.env });
    expect(down.code).toBe(13);
    expect(down.stderr).toMatch(/could not reach the Hub at http:\/\/127\.0\.0\.1:9/);
  });
});

describe('oh-hai hub serve: flags and defaults', () => {
  it('refuses bad knobs with exit 2 naming the flag', async () => {
    const t = tempEnv();
    try {
      const notNumber = await runOhHai(['hub', 'serve', '--port', '0', '--lease-min-seconds', 'soon'], { env: t.env });
      expect(notNumber.code).toBe(2);
      expect(notNumber.stderr).toMatch(/--lease-min-seconds/);
      const crossed = await runOhHai(['hub', 'serve', '--port', '0', '--lease-min-seconds', '100', '--lease-max-seconds', '50'], { env: t.env });
      expect(crossed.code).toBe(2);
      expect(crossed.stderr).toMatch(/--lease-min-seconds \(100\) is above --lease-max-seconds \(50\)/);
      const tokens = await runOhHai(['hub', 'serve', '--port', '0'], { env: { ...t.env, MA2H_AGENT_TOKENS: 'no-equals-sign' } });
      expect(tokens.code).toBe(2);
      expect(tokens.stderr).toMatch(/MA2H_AGENT_TOKENS/);
      for (const knob of ['OH_HAI_HUB_SHUTDOWN_STREAMS_MS', 'OH_HAI_HUB_SHUTDOWN_WORK_MS']) {
        const bad = await runOhHai(['hub', 'serve', '--port', '0'], { env: { ...t.env, [knob]: 'soon' } });
        expect(bad.code, bad.stderr).toBe(2);
        expect(bad.stderr).toContain(knob);
      }
    } finally {
      t.cleanup();
    }
  });

  it('refuses a second Hub on a data dir that a running Hub holds, with exit 2', async () => {
    const hub = await startHub();
    const t = tempEnv();
    try {
      const second = await runOhHai(['hub', 'serve', '--port', '0', '--data', hub.dataDir], { env: t.env });
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(/FATAL \(exit 2, data_dir_in_use\) — another Hub is using the data dir/);
      expect((await hubCall(hub, 'GET', '/v1/capability')).status).toBe(200);
    } finally {
      await hub.dispose();
      t.cleanup();
    }
  });

  it('keeps its store under the state root by default, never in the cwd, and clamps the advertised wait', async () => {
    const t = tempEnv();
    const proc = startOhHai(['hub', 'serve', '--port', '0', '--max-wait-seconds', '300', '--presence-seconds', '40'], { env: t.env, cwd: t.root });
    try {
      let out = '';
      proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
      const url = await waitFor(() => /hub: listening on (\S+)/.exec(out)?.[1]);
      const dataDir = path.join(t.env.XDG_STATE_HOME!, 'oh-hai', 'hub');
      expect(out).toContain(`hub: data ${dataDir}`);
      expect(out).not.toContain('⚠️');
      expect(statSync(path.join(dataDir, 'human-token')).mode & 0o777).toBe(0o600);
      expect(existsSync(path.join(t.root, 'hub.sqlite'))).toBe(false);
      const cap = await hubCall(url, 'GET', '/v1/capability');
      expect(cap.body.inbound.max_wait_seconds).toBe(40);
      // The admin commands find this Hub through the URL it recorded.
      const ls = await runOhHai(['hub', 'agent', 'ls'], { env: t.env });
      expect(ls.code, ls.stderr).toBe(0);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      t.cleanup();
    }
  });
});

describe('oh-hai hub serve beyond loopback', () => {
  // A wildcard --host is no address to open: what it prints is loopback, then this machine's own addresses.
  it.each([
    ['0.0.0.0', 'http://127.0.0.1', ['IPv4']],
    ['::', 'http://[::1]', ['IPv4', 'IPv6']],
  ])('--host %s prints URLs a user can open, and warns that plain http carries tokens unencrypted', async (host, loopback, families) => {
    const t = tempEnv();
    const data = path.join(t.root, 'hub');
    const proc = startOhHai(['hub', 'serve', '--host', host, '--port', '0', '--data', data], { env: t.env, cwd: t.root });
    try {
      let out = '';
      proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
      const url = await waitFor(() => /hub: listening on (\S+)/.exec(out)?.[1], { what: 'the Hub to listen' });
      const port = new URL(url).port;
      expect(url).toBe(`${loopback}:${port}`);
      expect(out).toContain(`hub: web inbox at ${loopback}:${port}/ (sign in with the human token)\n`);
      expect((await fetch(`${url}/v1/capability`)).status).toBe(200);
      expect(JSON.parse(readFileSync(path.join(data, 'hub.json'), 'utf8'))).toMatchObject({ url });
      const mine = Object.values(networkInterfaces())
        .flatMap((i) => i ?? [])
        .filter((i) => !i.internal && families.includes(i.family) && !i.address.startsWith('fe80:'))
        .map((i) => `http://${i.family === 'IPv6' ? `[${i.address}]` : i.address}:${port}/`);
      const line = /^hub: --host \S+ listens on every interface.*$/m.exec(out)?.[0] ?? '';
      expect(line, out).not.toBe('');
      for (const u of mine) expect(line).toContain(u);
      expect(out).not.toMatch(/0\.0\.0\.0:|\[::\]:/);
      expect(out).toContain(`\nhub: ⚠️ --host ${host} serves plain http beyond this machine: `);
      expect(out).toMatch(/ unencrypted\. Listen on 127\.0\.0\.1 behind a TLS-terminating proxy/);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      t.cleanup();
    }
  });
});

describe('oh-hai hub serve where the interfaces cannot be listed', () => {
  const preload = path.join(path.dirname(fileURLToPath(import.meta.url)), 'no-interfaces.cjs');
  // os.networkInterfaces throws where the OS refuses (Android): a Hub on one address never asks, and a wildcard one says it could not list them.
  it.each([
    ['127.0.0.1', null],
    [
      '0.0.0.0',
      /^hub: --host 0\.0\.0\.0 listens on every interface; this machine's addresses could not be listed \(.*uv_interface_addresses.*\): from another machine, use one of them with port \d+; from this one, http:\/\/127\.0\.0\.1:\d+\/$/m,
    ],
  ])('--host %s serves', async (host, line) => {
    const t = tempEnv();
    const proc = startOhHai(['hub', 'serve', '--host', host, '--port', '0', '--data', path.join(t.root, 'hub')], {
      env: { ...t.env, NODE_OPTIONS: `--require=${preload}` },
      cwd: t.root,
    });
    try {
      let out = '';
      let err = '';
      proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
      proc.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
      const url = await waitFor(() => /hub: listening on (\S+)/.exec(out)?.[1] ?? (proc.exitCode !== null ? 'exited' : null), { what: 'the Hub to listen' });
      expect(url, `${out}\n${err}`).not.toBe('exited');
      expect((await fetch(`${url}/v1/capability`)).status).toBe(200);
      if (line) expect(out).toMatch(line);
      else expect(out).not.toContain('every interface');
      expect(err).toBe('');
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
      t.cleanup();
    }
  });
});

describe('oh-hai demo', () => {
  it('runs the round trip on an embedded Hub, the message printed by a real oh-hai bridge, and exits 0', async () => {
    const t = tempEnv();
    try {
      const r = await runOhHai(['demo'], { env: t.env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^\[mail 1\] notify from agent:agt_\S+ \(msg_\S+\) .*"Hello from alice/m);
      expect(r.stdout).toContain('queued → delivered → acknowledged');
      expect(r.stdout).toMatch(/^closed session sess_\S+/m);
    } finally {
      t.cleanup();
    }
  });
});
