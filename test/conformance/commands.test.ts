import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bridge, cli, consumers, live, party, peerHub, sessionsOf, teardown } from './world.js';

/**
 * The other commands that speak to a Hub, against the peer Hub: `doctor --self-test` (a
 * whole round trip: §3, §4, §6, §8, §10), `session status`/`close` (§3) and `upgrade`
 * (the §10 directory, or its absence per §1).
 */

afterEach(teardown);

const ROUND_TRIP = ['register', 'send', 'drain', 'verify', 'ack', 'reachability', 'close'];

describe('doctor --self-test against the peer Hub', () => {
  for (const ids of ['peer', 'exotic'] as const) {
    it(`passes every round-trip step and closes its throwaway session (${ids} ids)`, async () => {
      const hub = await peerHub({ ids });
      const a = party(hub, 'doctor');
      const r = await cli(a, 'dr', ['doctor', '--self-test']);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      for (const step of ROUND_TRIP) expect(r.stdout).toMatch(new RegExp(`^pass  ${step}\\b`, 'm'));
      expect(r.stdout).not.toMatch(/^fail/m);
      expect(sessionsOf(hub, a).map((s) => s.state)).toEqual(['closed']);
    });
  }
});

describe('session status and close against the peer Hub', () => {
  it("status prints the Hub's state and instants verbatim; close stops the connection, closes at the Hub, and a second close is 4", async () => {
    const hub = await peerHub();
    const a = party(hub, 'stand-down');
    expect((await bridge(a, 'sd', ['--wait', '0.5'])).code).toBe(0);
    const s = await live(hub, a, 'sd');
    const status = await cli(a, 'sd', ['session', 'status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`session ${s.id} · agent:${a.id}#${s.id}`);
    expect(status.stdout).toMatch(new RegExp(`active · lease 600 s · expires \\S+ · last renewed \\S+ · created ${new Date(s.createdAt).toISOString()}`));
    expect(hub.requests.some((q) => q.route === 'sessions.get')).toBe(true);

    const close = await cli(a, 'sd', ['session', 'close']);
    expect(close.code, close.stderr).toBe(0);
    expect(s.state).toBe('closed');
    expect(close.stdout).toContain(`at the Hub at ${new Date(s.closedAt!).toISOString()} (Hub's clock)`);
    expect(consumers(a).map((c) => c.state)).toEqual(['stopped']);
    // The connection stopped before the Hub close (closing first races a re-register): one session only.
    expect(sessionsOf(hub, a)).toHaveLength(1);
    const again = await cli(a, 'sd', ['session', 'close']);
    expect(again.code, again.stderr).toBe(4);
  });
});

describe('upgrade against the peer Hub', () => {
  it('writes the sender policy from the agent directory, config identities included, dropping an id no bridge could match', async () => {
    const hub = await peerHub();
    const a = party(hub, 'fleet-host');
    const peer = hub.addAgent({ label: 'peer two' });
    const configured = hub.addAgent({ label: 'from config', source: 'config' });
    hub.addAgent({ label: 'quotes', id: `both"and'quotes` });
    const r = await cli(a, null, ['upgrade']);
    expect(r.code, r.stderr).toBe(0);
    expect(hub.requests.some((q) => q.route === 'account.agents' && q.caller === 'agent' && q.target.includes('include=config'))).toBe(true);
    const toml = readFileSync(path.join(a.env.XDG_CONFIG_HOME!, 'oh-hai', 'config.toml'), 'utf8');
    for (const id of [a.id, peer.id, configured.id]) expect(toml).toContain(`"agent:${id}"`);
    expect(toml).not.toContain('both');
    expect(r.stderr).toMatch(/dropped agent .*both.*quote/);
  });

  it('writes nothing when the Hub advertises no agent directory, and says the fix is login --human', async () => {
    const hub = await peerHub({ agentDirectory: false });
    const a = party(hub, 'no-directory');
    const r = await cli(a, null, ['upgrade']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(path.join(a.env.XDG_CONFIG_HOME!, 'oh-hai', 'config.toml'))).toBe(false);
    expect(r.stderr).toMatch(/not written/);
    expect(r.stderr).toContain('oh-hai login --human');
    expect(hub.requests.filter((q) => q.route === 'account.agents')).toEqual([]);
  });
});
