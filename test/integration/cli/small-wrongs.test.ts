import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BRIDGE_EXIT_TABLE } from '../../../src/core/exit.js';
import { runOhHai, startOhHai, collect } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { waitFor } from '../../helpers/wait.js';
import { useParties, as, register, sessionOf, stateDirOf } from '../messaging/world.js';

/** Issue 17, point 6: each "small wrong" a new user tripped over, one test each. */
describe('without a Hub', () => {
  it('bare `oh-hai` prints the help on stdout and exits 0, with no commander internals', async () => {
    const t = tempEnv();
    const r = await runOhHai([], { env: t.env });
    t.cleanup();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: oh-hai /);
    expect(r.stderr).toBe('');
  });

  it('a typo is named under the command it was typed in, and the hint names the suggested command', async () => {
    const t = tempEnv();
    const top = await runOhHai(['brige'], { env: t.env });
    const sub = await runOhHai(['session', 'stauts'], { env: t.env });
    t.cleanup();
    expect(top.code).toBe(2);
    expect(top.stderr).toBe("oh-hai: unknown command 'brige'\n(Did you mean bridge?)\nRun 'oh-hai bridge --help' for usage.\n");
    expect(sub.stderr).toBe("oh-hai session: unknown command 'stauts'\n(Did you mean status?)\nRun 'oh-hai session status --help' for usage.\n");
  });

  it('a wrong flag or a missing argument of a subcommand is named by that subcommand, with its own --help', async () => {
    const t = tempEnv();
    const flag = await runOhHai(['fleet', 'ls', '--bogus'], { env: t.env });
    const option = await runOhHai(['hub', 'lift'], { env: t.env });
    const arg = await runOhHai(['hub', 'agent', 'add'], { env: t.env });
    t.cleanup();
    expect(flag.code).toBe(2);
    expect(flag.stderr).toBe("oh-hai fleet ls: unknown option '--bogus'\nRun 'oh-hai fleet ls --help' for usage.\n");
    expect(option.code).toBe(2);
    expect(option.stderr).toBe("oh-hai hub lift: required option '--agent <id>' not specified\nRun 'oh-hai hub lift --help' for usage.\n");
    expect(arg.code).toBe(2);
    expect(arg.stderr).toBe("oh-hai hub agent add: missing required argument 'label'\nRun 'oh-hai hub agent add --help' for usage.\n");
  });

  it('a token in a flag of a command that has no --token says it is exposed and where a token goes, exit 2', async () => {
    const t = tempEnv();
    const bridge = await runOhHai(['bridge', '--token', 'ohh_a_leaked'], { env: t.env });
    const send = await runOhHai(['send', '--token=ohh_a_leaked', '--to', 'reviewer', 'hi'], { env: t.env });
    const typo = await runOhHai(['send', '--tokens', 'x'], { env: t.env });
    t.cleanup();
    for (const [r, name] of [
      [bridge, 'oh-hai bridge'],
      [send, 'oh-hai send'],
    ] as const) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^${name}: unknown option '--token(=ohh_a_leaked)?'\nNo command takes a token as a flag value — .*treat that token as exposed and rotate it\. .*oh-hai login --token-stdin < token-file .*OH_HAI_TOKEN.*\nRun '${name} --help' for usage\.\n$`,
        ),
      );
    }
    expect(typo.stderr).toBe("oh-hai send: unknown option '--tokens'\nRun 'oh-hai send --help' for usage.\n");
  });

  it('a Hub login cannot reach names the request it tried once', async () => {
    const t = tempEnv({ MA2H_HUB_URL: 'http://127.0.0.1:9' });
    const r = await runOhHai(['login', '--token-stdin'], { env: t.env, input: 'ohh_a_unused\n' });
    t.cleanup();
    expect(r.code).toBe(13);
    expect(r.stderr).toMatch(/^oh-hai login: FATAL \(exit 13, hub_network\) — could not reach a usable Hub at http:\/\/127\.0\.0\.1:9 \(GET \/v1\/whoami: /);
    expect(r.stderr.match(/GET \/v1\/whoami/g)).toHaveLength(1);
  });

  it('a send, fleet ls, a bare OH_HAI_TOKEN and the bridge the Hub cannot reach name the request, and the connect error, once', async () => {
    const t = tempEnv({ MA2H_HUB_URL: 'http://127.0.0.1:9' });
    // A stored credential names its agent, so no whoami comes first; a bare OH_HAI_TOKEN's does.
    const stored = {
      version: 1,
      hubs: [{ hub: 'http://127.0.0.1:9', agents: [{ id: 'agt_0123456789abcdef01234567', label: 'builder', token: 'ohh_a_unused' }], human: null }],
    };
    mkdirSync(path.join(t.root, 'config', 'oh-hai'), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(t.root, 'config', 'oh-hai', 'credentials.json'), JSON.stringify(stored), { mode: 0o600 });
    const send = await runOhHai(['send', '--to', 'reviewer', 'hi'], { env: t.env });
    const fleet = await runOhHai(['fleet', 'ls'], { env: t.env });
    const bare = await runOhHai(['send', '--to', 'agent:agt_0123456789abcdef01234567', 'hi'], { env: { ...t.env, OH_HAI_TOKEN: 'ohh_a_unused' } });
    const bridge = await runOhHai(['bridge', '--session', 'x', '--wait', '0'], { env: { ...t.env, OH_HAI_TOKEN: 'ohh_a_unused' } });
    t.cleanup();
    expect(bridge.code).toBe(13);
    expect(bridge.stderr).toMatch(
      /FATAL \(exit 13, hub_unreachable\) — could not learn this token's agent id from http:\/\/127\.0\.0\.1:9 \(GET \/v1\/whoami: connect /,
    );
    expect(bridge.stderr.match(/\/v1\/whoami/g)).toHaveLength(1);
    expect(bridge.stderr.match(/ECONNREFUSED/g)).toHaveLength(1);
    for (const [r, request] of [
      [send, 'GET /v1/capability'],
      [fleet, 'GET /v1/fleet'],
      [bare, 'GET /v1/whoami'],
    ] as const) {
      expect(r.code).toBe(13);
      expect(r.stderr).toMatch(/FATAL \(exit 13, hub_unreachable\) — could not reach the Hub at http:\/\/127\.0\.0\.1:9 while /);
      expect(r.stderr.split(request)).toHaveLength(2);
      expect(r.stderr.match(/ECONNREFUSED/g)).toHaveLength(1);
    }
  });

  it('a URL that answers 404 without MA2H (a web server, a proxy) is exit 13 saying to check the URL, for the bridge and a send', async () => {
    const server = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<html>File not found</html>'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const t = tempEnv({ MA2H_HUB_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, OH_HAI_TOKEN: 'ohh_a_unused' });
    try {
      const bridge = await runOhHai(['bridge', '--session', 'x', '--wait', '0'], { env: t.env });
      const send = await runOhHai(['send', '--to', 'agent:agt_x', 'hi'], { env: t.env });
      for (const r of [bridge, send]) {
        expect(r.code, r.stderr).toBe(13);
        expect(r.stderr).toContain(
          'it is not an MA2H Hub, or a proxy in front of it does not pass /v1/ through; check the Hub URL (--hub, MA2H_HUB_URL or [hub] url) with `oh-hai doctor`',
        );
      }
      expect(bridge.stderr).toMatch(/— re-running will not help\n$/);
    } finally {
      server.close();
      t.cleanup();
    }
  });

  it('Ctrl-C and SIGTERM have their codes in the exit table', () => {
    const row = (code: number) => BRIDGE_EXIT_TABLE.find((r) => r.code === code);
    expect(row(130)?.meaning).toMatch(/Ctrl-C \(SIGINT\)/);
    expect(row(143)?.meaning).toMatch(/SIGTERM/);
  });

  it('an empty stdin is said once, without a second `oh-hai send:` prefix', async () => {
    const t = tempEnv({ MA2H_HUB_URL: 'http://127.0.0.1:9', OH_HAI_TOKEN: 'oh_unused' });
    const r = await runOhHai(['send', '--to', 'agent:agt_x'], { env: t.env, input: '' });
    t.cleanup();
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('oh-hai send: FATAL (exit 2, bad_text) — stdin was empty; pipe the text in, or give it as the last argument\n');
  });
});

describe('with a Hub', () => {
  const world = useParties(['alice', 'bob']);

  it('`session status` with no session is an answer on stdout and exit 0, not FATAL (exit 4)', async () => {
    const r = await as(world.bob, 'bob-never', ['session', 'status']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^no session: this agent session \(MA2H_AGENT_SESSION_ID=bob-never\) holds no session/);
    const json = await as(world.bob, 'bob-never', ['session', 'status', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ session_id: null, hub: null, local: null, hub_error: expect.stringMatching(/holds no session/) });
  });

  it('`session status` of a session the user named and the Hub does not know says to check it, not that the bridge replaces it', async () => {
    const r = await as(world.bob, null, ['session', 'status', '--session', 'sess_nobody']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /^oh-hai session status: FATAL \(exit 4, session_not_found\) — the Hub does not know session sess_nobody, which --session sess_nobody names \(404 session_not_found: .*\); check it against `oh-hai fleet ls --sessions`, or drop it \(oh-hai bridge exits 4 on it\)\n$/,
    );
  });

  it('a bridge pinned to a session its agent closed says to clear the pin, not to run again', async () => {
    const { id } = await register(world.bob, world.hub, 'bob-pin');
    expect((await as(world.bob, 'bob-pin', ['session', 'close'])).code).toBe(0);
    // The wait outlasts the connection's stop on a loaded machine: the run relays it as soon as it is recorded.
    const r = await as(world.bob, null, ['bridge', '--session', id, '--wait', '30']);
    expect(r.code, r.stderr).toBe(15);
    expect(r.stderr).toContain(
      `— this agent stood the session down (oh-hai session close); the pinned session ${id} stays closed: clear or repoint --session / MA2H_SESSION_ID before running again, or it exits 15 again`,
    );
  });

  it('the no-sender-policy notice is said once per connection start, not on every run', async () => {
    const env = { ...world.bob.env, MA2H_AGENT_SESSION_ID: 'bob-notice' };
    const first = await runOhHai(['bridge', '--wait', '0'], { env });
    await waitFor(() => sessionOf(world.bob, world.hub, 'bob-notice'), { what: 'the connection to register its session' });
    const again = await runOhHai(['bridge', '--wait', '0'], { env });
    expect(first.stderr).toMatch(/started the background connection/);
    expect(first.stderr).toMatch(/^oh-hai bridge: no sender policy is declared: /m);
    expect(again.stderr).toMatch(/adopting the running background connection/);
    expect(again.stderr).not.toMatch(/no sender policy is declared/);
    await as(world.bob, 'bob-notice', ['session', 'close']);
  });

  it('Ctrl-C stops the bridge with exit 130 and a STOPPED line, not FATAL', async () => {
    const child = startOhHai(['bridge', '--allow-from', 'any-in-account', '--wait', '60'], { env: { ...world.bob.env, MA2H_AGENT_SESSION_ID: 'bob-int' } });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await waitFor(() => stderr.includes('started the background connection'), { what: 'the bridge to start its connection' });
    child.kill('SIGINT');
    const r = await collect(child);
    expect(r.code).toBe(130);
    expect(stderr).toMatch(/^oh-hai bridge: STOPPED \(exit 130, interrupted\) — stopped by Ctrl-C \(SIGINT\) after finishing the record in flight/m);
    expect(stderr).not.toContain('FATAL');
    await as(world.bob, 'bob-int', ['session', 'close']);
  });

  it('a directory where a state file belongs is exit 1 state_unreadable naming it and `rm -r`, not "a bug"', async () => {
    await register(world.bob, world.hub, 'bob-dir');
    const dir = stateDirOf(world.bob, world.hub, 'bob-dir');
    for (const name of ['reader.json', 'settings.json']) {
      const p = path.join(dir, name);
      rmSync(p, { force: true });
      mkdirSync(p);
      const r = await as(world.bob, 'bob-dir', ['bridge', '--wait', '0']);
      rmSync(p, { recursive: true });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(
        `oh-hai bridge: FATAL (exit 1, state_unreadable) — ${p} is a directory where oh-hai keeps a file; nothing in it is oh-hai's. Remove it (rm -r '${p}') and run again\n`,
      );
      expect(r.stderr).not.toMatch(/this is a bug|tightened permissions/);
    }
    await as(world.bob, 'bob-dir', ['session', 'close']);
  });

  it('session status and session close give the refusal of an entry the open refuses, not "no state entry"', async () => {
    await register(world.bob, world.hub, 'bob-dir-status');
    const dir = stateDirOf(world.bob, world.hub, 'bob-dir-status');
    const refusal = (cmd: string, p: string) =>
      `oh-hai ${cmd}: FATAL (exit 1, state_unreadable) — ${p} is a directory where oh-hai keeps a file; nothing in it is oh-hai's. Remove it (rm -r '${p}') and run again\n`;
    // reader.json: the session is recorded (status reads it); session.json: none is (status's "no session" answer).
    for (const name of ['reader.json', 'session.json']) {
      const p = path.join(dir, name);
      const kept = name === 'session.json' ? readFileSync(p) : null;
      rmSync(p, { force: true });
      mkdirSync(p);
      const status = await as(world.bob, 'bob-dir-status', ['session', 'status']);
      const close = await as(world.bob, 'bob-dir-status', ['session', 'close']);
      rmSync(p, { recursive: true });
      if (kept) writeFileSync(p, kept, { mode: 0o600 });
      for (const [cmd, r] of [
        ['session status', status],
        ['session close', close],
      ] as const) {
        expect(r.code, `${cmd}: ${r.stdout}${r.stderr}`).toBe(1);
        expect(r.stderr).toBe(refusal(cmd, p));
        expect(r.stdout, cmd).toBe('');
      }
    }
    // Nothing was stood down: the session is still open and still recorded.
    expect((await as(world.bob, 'bob-dir-status', ['session', 'status'])).code).toBe(0);
    expect((await as(world.bob, 'bob-dir-status', ['session', 'close'])).code).toBe(0);
  });

  it('a send retrying a Hub that is down says how long it waits, never "retrying in 0s"', async () => {
    // A first send while it is up: the agent id is then known here, and the send itself meets the outage.
    expect((await as(world.alice, null, ['send', '--to', world.bob.address, 'hello'])).code).toBe(0);
    await world.hub.stop();
    try {
      const r = await as(world.alice, null, ['send', '--to', world.bob.address, 'anyone?']);
      expect(r.code).toBe(13);
      expect(r.stderr).toMatch(/retrying in \d+ ms\n/);
      expect(r.stderr).not.toContain('retrying in 0s');
    } finally {
      await world.hub.restart();
    }
  });
});
