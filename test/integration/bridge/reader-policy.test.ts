import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';
import { bridge, consumerOf, stateDirOf, hubCall, registered, sessionIdOf, useBridgeWorld } from './world.js';

/**
 * The sender policy through the real bridge and connection (product doc, "The sender
 * policy"): a named peer is admitted and nobody else, and a changed policy takes effect when
 * the connection restarts. Also: the bridge writes nothing where it is run.
 */

const world = useBridgeWorld();

const ask = async (from: { token: string }, to: string, text: string): Promise<string> => {
  const r = await hubCall(world.hub, from.token, 'POST', '/v1/messages', { to, intent: 'ask', text });
  if (r.status !== 202) throw new Error(`ask → ${r.status} ${JSON.stringify(r.json)}`);
  return (r.json as { message: { id: string } }).message.id;
};

const stateOf = async (a: { token: string }, id: string): Promise<string> =>
  ((await hubCall(world.hub, a.token, 'GET', `/v1/messages/${id}`)).json as { message: { state: string } }).message.state;

const log = (dir: string): string => {
  try {
    return readFileSync(path.join(dir, 'bridge.log'), 'utf8');
  } catch {
    return '';
  }
};

describe('the sender policy through oh-hai bridge', () => {
  it("--allow-from agent:<id> admits exactly that peer: its ask is printed, another agent's is refused and left queued", async () => {
    const a = await world.agent();
    const [allowed, other] = [await world.hub.mintAgent('allowed'), await world.hub.mintAgent('other')];
    const dir = stateDirOf(a, world.hub, 'policy');
    expect((await bridge(a, 'policy', ['--wait', '0', '--allow-from', `agent:${allowed.id}`])).code).toBe(0);
    const sess = await registered(dir);
    expect(consumerOf(dir)!.policy).toEqual([`agent:${allowed.id}`]);
    const refused = await ask(other, `agent:${a.id}#${sess}`, 'from the other one');
    await waitFor(() => log(dir).includes('refused entry'), { what: 'the other agent\u2019s ask to be refused' });
    await ask(allowed, `agent:${a.id}#${sess}`, 'from the allowed one');
    const r = await bridge(a, 'policy', ['--wait', '30']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('"from the allowed one"');
    expect(r.stdout).not.toContain('from the other one');
    expect(await stateOf(other, refused)).toBe('queued');
  });

  it('a changed --allow-from is exit 2 against the running connection, and applies after session close --keep-connection, under the same address', async () => {
    const a = await world.agent();
    const [first, second] = [await world.hub.mintAgent('first'), await world.hub.mintAgent('second')];
    const dir = stateDirOf(a, world.hub, 'change');
    expect((await bridge(a, 'change', ['--wait', '0', '--allow-from', `agent:${first.id}`])).code).toBe(0);
    const sess = await registered(dir);
    const running = consumerOf(dir)!.pid;
    const named = await bridge(a, 'change', ['--wait', '0', '--allow-from', `agent:${second.id}`]);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain('oh-hai session close --keep-connection');
    const close = await runOhHai(['session', 'close', '--keep-connection'], { env: { ...a.env, MA2H_AGENT_SESSION_ID: 'change' } });
    expect(close.code, close.stderr).toBe(0);
    const applied = await bridge(a, 'change', ['--wait', '0', '--allow-from', `agent:${second.id}`]);
    expect(applied.code, applied.stderr).toBe(0);
    const now = await waitFor(
      () => {
        const c = consumerOf(dir);
        return c && c.pid !== running && c.state === 'running' ? c : null;
      },
      { what: 'the new connection to run' },
    );
    expect(now.policy).toEqual([`agent:${second.id}`]);
    expect(sessionIdOf(dir)).toBe(sess);
    await ask(second, `agent:${a.id}#${sess}`, 'admitted now');
    const r = await bridge(a, 'change', ['--wait', '30']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('"admitted now"');
  });
});

describe('where the bridge writes', () => {
  it('writes nothing into the working directory: everything lives in the state entry', async () => {
    const a = await world.agent();
    const cwd = world.tempDir('oh-hai-project-');
    const r = await runOhHai(['bridge', '--wait', '0'], { env: { ...a.env, MA2H_AGENT_SESSION_ID: 'here' }, cwd });
    expect(r.code, r.stderr).toBe(0);
    await registered(stateDirOf(a, world.hub, 'here'));
    expect(readdirSync(cwd)).toEqual([]);
  });
});
