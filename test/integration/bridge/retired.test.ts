import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isSameProcessAlive, sessionStateDir, stampOf, stateKey } from '../../../src/spool/index.js';
import { runOhHai } from '../../helpers/cli.js';
import { hubCall } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { bridge, consumerOf, stateDirOf, registered, sessionIdOf, useBridgeWorld } from './world.js';

/** The retired subcommands warn once and forward, returning the forwarded command's exit code. */
const world = useBridgeWorld();

const warnings = (stderr: string, what: string) =>
  stderr.split('\n').filter((l) => l.startsWith(`oh-hai bridge: ${what} is retired`) || l.startsWith(`oh-hai bridge: ${what} is the old spelling`));

describe('retired bridge subcommands', () => {
  it('bridge stop forwards to oh-hai session close: stops the connection, closes the session, exit 0; then 4 with nothing to stand down', async () => {
    const a = await world.agent();
    const dir = stateDirOf(a, world.hub, 'stopme');
    expect((await bridge(a, 'stopme', ['--wait', '0'])).code).toBe(0);
    await registered(dir);
    const pid = consumerOf(dir)!.pid;
    // --session after the subcommand belongs to it, not to the bridge.
    const r = await runOhHai(['bridge', 'stop', '--session', 'stopme'], { env: a.env });
    expect(warnings(r.stderr, 'bridge stop')).toHaveLength(1);
    expect(r.stderr).toContain('forwarding to oh-hai session close');
    expect(r.code).toBe(0);
    await waitFor(() => isSameProcessAlive(stampOf(pid)) === 'dead', { what: 'the connection to stop' });
    const again = await runOhHai(['bridge', 'stop', '--session', 'stopme'], { env: a.env });
    expect(again.code).toBe(4);
    const direct = await runOhHai(['session', 'close', '--session', 'stopme'], { env: a.env });
    expect(direct.code).toBe(again.code);
  });

  it('bridge stop --keep-session forwards to session close --keep-connection', async () => {
    const a = await world.agent();
    const dir = stateDirOf(a, world.hub, 'keep');
    expect((await bridge(a, 'keep', ['--wait', '0'])).code).toBe(0);
    const sess = await registered(dir);
    const r = await runOhHai(['bridge', 'stop', '--keep-session', '--session', 'keep'], { env: a.env });
    expect(r.stderr).toContain('forwarding to oh-hai session close --keep-connection');
    expect(r.code).toBe(0);
    // The session stays: the next bridge run comes back to the same address.
    expect((await bridge(a, 'keep', ['--wait', '0'])).code).toBe(0);
    expect(sessionIdOf(dir)).toBe(sess);
  });

  it('bridge stop --purge closes the session, then clears the state entry; --state-home and --hub typed after the subcommand are carried', async () => {
    const a = await world.agent();
    const root = world.tempDir('oh-hai-purge-');
    const dir = sessionStateDir(root, stateKey(world.hub.url, a.id, 'purgeme'));
    expect((await bridge(a, 'purgeme', ['--wait', '0', '--state-home', root])).code).toBe(0);
    const sess = await registered(dir);
    const pid = consumerOf(dir)!.pid;
    // The environment names a Hub nobody listens on: only the --hub given after `stop` reaches the real one.
    const env = { ...a.env, MA2H_HUB_URL: 'http://127.0.0.1:9' };
    const r = await runOhHai(['bridge', 'stop', '--purge', '--state-home', root, '--hub', world.hub.url, '--session', 'purgeme'], { env });
    expect(warnings(r.stderr, 'bridge stop')).toHaveLength(1);
    expect(r.stderr).toContain('forwarding to oh-hai session close --purge');
    expect(r.code, r.stderr).toBe(0);
    expect(isSameProcessAlive(stampOf(pid))).toBe('dead');
    expect((await hubCall(world.hub, 'GET', `/v1/sessions/${sess}`, { token: a.token })).body.session.state).toBe('closed');
    expect(existsSync(dir)).toBe(false);
  });

  it('bridge consume forwards to the private entrypoint with its exit code', async () => {
    const env = { PATH: process.env.PATH };
    const r = await runOhHai(['bridge', 'consume', '--entry', '/nonexistent/entry'], { env });
    expect(warnings(r.stderr, 'bridge consume')).toHaveLength(1);
    const direct = await runOhHai(['__consumer', '--entry', '/nonexistent/entry'], { env });
    expect(r.code).toBe(direct.code);
    expect(r.code).not.toBe(0);
  });

  it('bridge status warns once and returns what oh-hai doctor --self-test returns', async () => {
    const a = await world.agent();
    const r = await runOhHai(['bridge', 'status', '--session', 'nobody'], { env: a.env });
    expect(warnings(r.stderr, 'bridge status')).toHaveLength(1);
    const direct = await runOhHai(['doctor', '--self-test', '--session', 'nobody'], { env: a.env });
    expect(r.code).toBe(direct.code);
  });
});
