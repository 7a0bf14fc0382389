import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAST_HUB, hubCall, useBenches, waitFor } from './harness.js';

const world = useBenches({ args: [...FAST_HUB, '--max-wait-seconds', '0.5'] });

describe('the principal leg (settings.leg = principal)', () => {
  it('long-polls the principal mailbox with no session, spools directives, acks by cursor without a session', async () => {
    const bench = await world.bench();
    bench.settings({ leg: 'principal', name: null, interval_seconds: 0.1 });
    bench.attend();
    const p = bench.start();
    const rec = await waitFor(() => (bench.consumer()?.state === 'running' ? bench.consumer() : null), { what: 'running' });
    expect(rec!.transport).toBe('poll');
    expect(bench.session()).toBeNull();
    const principal = `agent:${bench.me.id}`;
    const id = await bench.directive('for the agent itself', principal);
    const [line] = await waitFor(() => (bench.entries().length === 1 ? bench.entries() : null), { what: 'the directive spooled' });
    expect(line).toMatchObject({ seq: 1, session: principal, entry: { to: principal, text: 'for the agent itself' } });
    await waitFor(async () => (await hubCall(world.hub, 'GET', `/v1/messages/${id}`, { token: world.hub.humanToken })).body.message.state === 'delivered', {
      what: 'delivered',
    });
    bench.advanceCursor(1);
    await waitFor(async () => (await hubCall(world.hub, 'GET', `/v1/messages/${id}`, { token: world.hub.humanToken })).body.message.state === 'acknowledged', {
      what: 'acknowledged',
    });
    expect(p.exitCode).toBeNull();
  });
});

describe('secrets', () => {
  it('with OH_HAI_TOKEN: the token is never in argv, in any state file or in bridge.log', async () => {
    const bench = await world.bench({ env: { MA2H_AGENT_TOKENS: '' } });
    const env = { OH_HAI_TOKEN: bench.me.token };
    bench.settings();
    bench.attend();
    const p = bench.start([], env);
    await bench.waitRunning();
    await bench.notify('a secret-free note');
    await waitFor(() => bench.entries().length === 1, { what: 'spooled' });
    const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8');
    expect(cmdline).toContain('__consumer');
    expect(cmdline).not.toContain(bench.me.token);
    for (const file of bench.stateFiles()) {
      if (path.basename(file).endsWith('.lock')) continue;
      // The connection is still running: a temp file listed may have been renamed onto its target
      // since — no file left behind, and what it held is the target's from then on.
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      expect(text, file).not.toContain(bench.me.token);
    }
    expect(bench.log()).toMatch(/registered session/);
  });
});
