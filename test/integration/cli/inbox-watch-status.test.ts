import { describe, expect, it } from 'vitest';
import { hubCall } from '../../helpers/hub.js';
import { hasScript, runOnPty } from '../../helpers/pty.js';
import { waitFor } from '../../helpers/wait.js';
import { as, stopAll, useParties } from '../messaging/world.js';

/**
 * `oh-hai inbox watch`'s live status line (docs/terminal.md): drawn on a terminal, erased
 * before each record and before the run's last lines, and never written to a pipe.
 */
const pty = hasScript();
if (!pty) console.warn('inbox-watch-status.test.ts: `script` (util-linux) is not installed, so the pseudo-terminal test cannot run');

const ERASE = '\r\x1b[K';
const WAITING = /oh-hai inbox watch: connected \(\w+\) — waiting for mail, \d+s left/;
const WATCH = ['inbox', 'watch', '--allow-from', 'any-in-account'];

describe('inbox watch status line', () => {
  const world = useParties(['alice', 'bob']);

  const directive = async (text: string) => {
    const r = await hubCall(world.hub, 'POST', '/v1/directives', { token: world.hub.humanToken, body: { to: world.bob.address, text } });
    expect(r.status).toBe(202);
  };

  it.runIf(pty)('on a terminal: connected with the wait counting down, erased before each record, nothing of it left at the end', async () => {
    let sent = false;
    const r = await runOnPty([...WATCH, '--wait', '60'], {
      env: world.bob.env,
      cols: 160,
      onOutput: (tty) => {
        if (sent || !WAITING.test(tty)) return;
        sent = true;
        void directive('d1: on a terminal');
      },
    });
    expect(r.code, r.tty).toBe(0);
    expect(r.tty).toMatch(WAITING);
    // The status line was drawn, then erased right before the record, so the record starts a clean line.
    const record = r.tty.indexOf('[mail 1] directive from human:');
    expect(record, r.tty).toBeGreaterThan(0);
    expect(r.tty.slice(0, record).endsWith(ERASE)).toBe(true);
    expect(r.tty.slice(0, record)).toMatch(WAITING);
    // After the last erase only the run's own last lines follow: no status text stays on the screen.
    const tail = r.tty.slice(r.tty.lastIndexOf(ERASE) + ERASE.length);
    expect(tail).not.toMatch(/waiting for mail/);
    expect(tail).toMatch(/^oh-hai inbox watch: consumer pid \d+ on \S+ drains agent:/);
    await stopAll(world.bob);
  });

  it('through pipes: the record and the last lines, and not a byte of the status line', async () => {
    // A run that waits out its bound with nothing waiting: on a terminal it would redraw the line every second.
    const idle = await as(world.bob, null, [...WATCH, '--wait', '2']);
    await directive('d2: through a pipe');
    expect(idle.code, idle.stderr).toBe(0);
    const runs = [idle];
    await waitFor(
      async () => {
        const r = await as(world.bob, null, [...WATCH, '--wait', '2']);
        expect(r.code, r.stderr).toBe(0);
        runs.push(r);
        return /^\[mail \d+\] directive from human:\S+ .*"d2: through a pipe"$/m.test(r.stdout);
      },
      { timeoutMs: 40_000, what: 'inbox watch to print the directive through a pipe' },
    );
    for (const stream of runs.flatMap((r) => [r.stdout, r.stderr])) {
      expect(stream).not.toContain('waiting for mail');
      expect(stream).not.toContain('\r');
      expect(stream).not.toContain('\x1b');
    }
    await stopAll(world.bob);
  });
});

describe('an idle principal drain on a terminal', () => {
  // The longest clamp a Hub allows: a status line that waited for the first held drain to answer
  // would say connecting (or reconnecting after an outage) for a minute, past the run's deadline.
  const world = useParties(['carol'], { args: ['--max-wait-seconds', '60'] });
  const CONNECTED = /oh-hai inbox watch: connected \(poll\) — waiting for mail/;
  const RECONNECTING = /oh-hai inbox watch: reconnecting: attempt \d+\/30, next in \ds/;

  it.runIf(pty)('says connected as soon as the Hub answers, not when the first long-poll does, and again at once after an outage', async () => {
    const env = { ...world.carol.env, OH_HAI_BACKOFF_MIN_MS: '1000', OH_HAI_BACKOFF_MAX_MS: '1000', OH_HAI_MAX_RETRIES: '30' };
    // connected → the Hub stops → reconnecting → the Hub is back → connected: each step on what the terminal shows.
    const steps = [CONNECTED, RECONNECTING, CONNECTED];
    const acts = [() => world.hub.stop(), () => world.hub.restart()];
    const pending: Promise<unknown>[] = [];
    let from = 0;
    try {
      const r = await runOnPty([...WATCH, '--wait', '300'], {
        env,
        cols: 160,
        timeoutMs: 45_000,
        onOutput: (tty) => {
          if (steps.length === 0 || !steps[0]!.test(tty.slice(from))) return;
          steps.shift();
          from = tty.length;
          const act = acts.shift();
          if (act) pending.push(act());
        },
        until: () => steps.length === 0,
      });
      expect(steps, r.tty).toEqual([]);
    } finally {
      await Promise.all(pending);
      if (world.hub.proc.exitCode !== null || world.hub.proc.signalCode !== null) await world.hub.restart();
      await stopAll(world.carol);
    }
  });
});
