import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { directoryCacheFile } from '../../../src/spool/index.js';
import { as, BRIDGE, stateDirOf, register, sessionOf, useParties } from './world.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * Agent names against a real Hub through the real CLI (docs/messaging.md "Names"): a label
 * unique in the account resolves through the agent directory (MA2H §10) read with the
 * sender's own agent token, and the output shows label and id.
 */
const world = useParties(['alice', 'bob']);

describe('sending to an agent by its label', () => {
  it('a unique label resolves to agent:<id>, the output shows both, and the directory is cached for summaries', async () => {
    const r = await as(world.alice, null, ['send', '--to', 'bob', 'hello by name']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^queued: notify msg_\\S+ to ${world.bob.address} \\(bob\\) — accepted by the Hub`, 'm'));
    expect(existsSync(directoryCacheFile({ stateRoot: world.alice.stateRoot, hubUrl: world.hub.url, agentId: world.alice.id }))).toBe(true);
    // The recipient really got it, addressed to its id.
    const list = await as(world.bob, null, ['messages', 'list', '--received', '--json']);
    expect(list.stdout).toContain('hello by name');
    expect(list.stdout).toContain(`"to":"${world.bob.address}"`);
    // Summaries print the label beside the id from the cache, with no directory call of their own.
    const lines = await as(world.alice, null, ['messages', 'list']);
    expect(lines.stdout).toMatch(new RegExp(`^msg_\\S+ · notify → ${world.bob.address} \\(bob\\) · `, 'm'));
  });

  it('a bare agent id resolves like a label; agent:<label> stays an address and its 404 says to drop the prefix', async () => {
    const byId = await as(world.alice, null, ['task', '--to', world.bob.id, 'by bare id']);
    expect(byId.code, byId.stderr).toBe(0);
    expect(byId.stdout).toContain(`to ${world.bob.address} (bob)`);
    const prefixed = await as(world.alice, null, ['send', '--to', 'agent:bob', 'wrong form']);
    expect(prefixed.code).toBe(4);
    expect(prefixed.stderr).toMatch(/no such recipient in this account: agent:bob .*label goes without the agent: prefix \(--to reviewer\)/);
  });

  it("the bridge's [mail N] lines show the sender's label once this agent's directory cache knows it, and never fetch it", async () => {
    const cache = directoryCacheFile({ stateRoot: world.bob.stateRoot, hubUrl: world.hub.url, agentId: world.bob.id });
    const { address } = await register(world.bob, world.hub, 'bob-labels');
    const bridge = () => as(world.bob, 'bob-labels', [...BRIDGE, '--wait', '20']);
    expect((await as(world.alice, null, ['send', '--to', address, 'before the cache'])).code).toBe(0);
    const before = await bridge();
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toMatch(new RegExp(`^\\[mail \\d+\\] notify from ${world.alice.address} \\(msg_\\w+\\) · .*"before the cache"$`, 'm'));
    expect(existsSync(cache)).toBe(false);
    // A directory fetch of bob's own (fleet ls) fills the cache; the next run's line names alice.
    expect((await as(world.bob, null, ['fleet', 'ls'])).code).toBe(0);
    expect(existsSync(cache)).toBe(true);
    expect((await as(world.alice, null, ['send', '--to', address, 'after the cache'])).code).toBe(0);
    const after = await bridge();
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toMatch(new RegExp(`^\\[mail \\d+\\] notify from ${world.alice.address} \\(alice\\) \\(msg_\\w+\\) · .*"after the cache"$`, 'm'));
    // --raw is the record as it was spooled: no label added.
    expect((await as(world.alice, null, ['send', '--to', address, 'raw'])).code).toBe(0);
    const raw = await as(world.bob, 'bob-labels', [...BRIDGE, '--raw', '--wait', '20']);
    expect(raw.stdout).not.toContain('(alice)');
  });

  it('an unknown label is exit 2 naming the agents there are; nothing is queued', async () => {
    const r = await as(world.alice, null, ['ask', '--to', 'carol', 'anyone?']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/FATAL \(exit 2, unknown_name\) — --to "carol" is no agent's label or id in this account's directory/);
    expect(r.stderr).toContain(`bob (${world.bob.address})`);
    const sent = await as(world.alice, null, ['messages', 'list', '--json']);
    expect(sent.stdout).not.toContain('anyone?');
  });

  it('a label two agents share is exit 2 naming both ids', async () => {
    const a = await world.hub.mintAgent('twin');
    const b = await world.hub.mintAgent('twin');
    const r = await as(world.alice, null, ['send', '--to', 'twin', 'which one?']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/FATAL \(exit 2, ambiguous_name\) — --to "twin" matches 2 agents/);
    expect(r.stderr).toContain(`twin (agent:${a.id}) by its label`);
    expect(r.stderr).toContain(`twin (agent:${b.id}) by its label`);
  });

  it('--allow-from takes a label: resolved once to agent:<id>, which the connection records and enforces; unknown and ambiguous are exit 2', async () => {
    const bridge = (args: string[], session = 'bob-policy') => as(world.bob, session, ['bridge', ...args]);
    const first = await bridge(['--allow-from', 'alice', '--wait', '0.2']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(
      new RegExp(
        `^oh-hai bridge: --allow-from alice is ${world.alice.address} \\(alice\\), from the (directory cache|agent directory): the policy names that id`,
        'm',
      ),
    );
    const settings = JSON.parse(readFileSync(path.join(stateDirOf(world.bob, world.hub, 'bob-policy'), 'settings.json'), 'utf8')) as { allow_from: string[] };
    expect(settings.allow_from).toEqual([world.alice.address]);
    const { address } = await waitFor(() => sessionOf(world.bob, world.hub, 'bob-policy'), { what: "bob's session" });
    // The policy admits alice's ask (with no policy it would be refused, fail-closed).
    expect((await as(world.alice, null, ['ask', '--to', address, 'may I?'])).code).toBe(0);
    // The same label again resolves to the same id (now from the cache): the run adopts the connection.
    const read = await bridge(['--allow-from', 'alice', '--wait', '20']);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stderr).toContain(`--allow-from alice is ${world.alice.address} (alice), from the directory cache`);
    expect(read.stdout).toMatch(new RegExp(`^\\[mail \\d+\\] ask from ${world.alice.address} \\(alice\\) \\(msg_\\w+\\) · .*"may I\\?"$`, 'm'));
    // A bare id is a name that matches that agent's id: the same policy.
    const byId = await bridge(['--allow-from', world.alice.id, '--wait', '0']);
    expect(byId.code, byId.stderr).toBe(0);
    expect(byId.stderr).not.toMatch(/FATAL/);
    const unknown = await bridge(['--allow-from', 'carol', '--wait', '0'], 'bob-unknown');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/FATAL \(exit 2, unknown_name\) — --allow-from "carol" is no agent's label or id in this account's directory/);
    expect(unknown.stderr).toContain(`alice (${world.alice.address})`);
    const twins = await bridge(['--allow-from', 'twin', '--wait', '0'], 'bob-twin');
    expect(twins.code).toBe(2);
    expect(twins.stderr).toMatch(/FATAL \(exit 2, ambiguous_name\) — --allow-from "twin" matches 2 agents/);
    // A refused label leaves no state entry behind: resolution comes before the entry.
    expect(existsSync(stateDirOf(world.bob, world.hub, 'bob-twin'))).toBe(false);
  });
});

describe('a Hub that advertises no agent directory', () => {
  const bare = useParties(['dora', 'eve'], { args: ['--no-agent-directory'] });
  it('refuses a name with exit 2 and the agent:<id> fix; an address still goes', async () => {
    const r = await as(bare.dora, null, ['send', '--to', 'eve', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/FATAL \(exit 2, no_agent_directory\) — this Hub advertises no agent directory .* address the agent as agent:<id>/);
    const ok = await as(bare.dora, null, ['send', '--to', bare.eve.address, 'x']);
    expect(ok.code, ok.stderr).toBe(0);
  });
});
