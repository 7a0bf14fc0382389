import { describe, expect, it } from 'vitest';
import { hasScript, runOnPty } from '../../helpers/pty.js';
import { as, stopAll, useParties } from '../messaging/world.js';

/** The live status line (docs/terminal.md) of the bridge and `ask --wait`, on a real pseudo-terminal. */
const pty = hasScript();
if (!pty) console.warn('status-line.test.ts: `script` (util-linux) is not installed, so the pseudo-terminal tests cannot run');

const ERASE = '\r\x1b[K';
const BRIDGE = ['bridge', '--allow-from', 'any-in-account'];

describe.runIf(pty)('the status line on a terminal', () => {
  const world = useParties(['alice', 'bob']);

  it('the bridge says it is connected and counts the wait down, erases the line before a record, and leaves nothing behind', async () => {
    const env = { ...world.bob.env, MA2H_AGENT_SESSION_ID: 'bob-status' };
    let sent = false;
    const r = await runOnPty([...BRIDGE, '--wait', '60'], {
      env,
      onOutput: (tty) => {
        if (sent || !/connected \(\w+\) — waiting for mail, \d+s left/.test(tty)) return;
        sent = true;
        void as(world.alice, null, ['send', '--to', world.bob.address, 'hello on a terminal']);
      },
    });
    expect(r.code, r.tty).toBe(0);
    expect(r.tty).toMatch(/oh-hai bridge: connected \(\w+\) — waiting for mail, \d+s left/);
    // The record starts on a clean line: the status line was erased right before it.
    expect(r.tty).toContain(`${ERASE}[mail 1] notify from agent:`);
    // After the last erase only the run's own last lines follow: no status text is left on the screen.
    const tail = r.tty.slice(r.tty.lastIndexOf(ERASE) + ERASE.length);
    expect(tail).not.toMatch(/waiting for mail/);
    expect(tail).toMatch(/lease — /);
    await stopAll(world.bob);
  });

  it('while the Hub is down the bridge shows the reconnect attempt and the next delay', async () => {
    const env = { ...world.bob.env, MA2H_AGENT_SESSION_ID: 'bob-down', OH_HAI_BACKOFF_MIN_MS: '3000', OH_HAI_BACKOFF_MAX_MS: '3000', OH_HAI_MAX_RETRIES: '5' };
    // A connection that is running when the Hub goes away: it reconnects with this backoff.
    expect((await as(world.bob, null, [...BRIDGE, '--wait', '0'], { env })).code).toBe(0);
    await world.hub.stop();
    try {
      // Ends on the line it waits for; --wait bounds a run that never shows it.
      const RECONNECTING = /oh-hai bridge: reconnecting: attempt \d\/5, next in \ds — waiting for mail, \ds left/;
      const r = await runOnPty(['bridge', '--wait', '8'], { env, cols: 160, until: (tty) => RECONNECTING.test(tty) });
      expect(r.tty).toMatch(RECONNECTING);
    } finally {
      await world.hub.restart();
      await stopAll(world.bob);
    }
  });

  it('`ask --wait` counts down while it waits for the answer', async () => {
    const r = await runOnPty(['ask', '--to', world.bob.address, '--wait', '2', 'are you there?'], { env: world.alice.env });
    expect(r.tty).toMatch(/oh-hai ask: waiting for the answer to msg_\w+, \ds left/);
  });

  it('under --raw there is no status line', async () => {
    const env = { ...world.bob.env, MA2H_AGENT_SESSION_ID: 'bob-raw' };
    const r = await runOnPty([...BRIDGE, '--raw', '--wait', '2'], { env });
    expect(r.code).toBe(0);
    expect(r.tty).not.toContain('waiting for mail');
    expect(r.tty).not.toContain('\x1b[K');
    await stopAll(world.bob);
  });
});
