import { describe, expect, it } from 'vitest';
import { adoptLegacyHome } from '../../../src/cli/resolve/adopt-legacy.js';
import { checkKnob, KNOBS, knobFromEnv, type KnobName, readKnobs } from '../../../src/core/index.js';
import type { StateDir } from '../../../src/spool/index.js';
import { fakeClock } from '../../../src/util/clock.js';

const names = Object.keys(KNOBS) as KnobName[];

describe('the knob registry', () => {
  it.each(names)('%s: unset is its default; a value in range is taken', (name) => {
    expect(knobFromEnv({}, name)).toEqual({ ok: true, value: KNOBS[name].default });
    expect(knobFromEnv({ [KNOBS[name].env]: '7' }, name)).toEqual({ ok: true, value: 7 });
  });

  it.each(names)('%s: anything that is not a number in range is exit 2 naming the variable, never a fallback', (name) => {
    const env = KNOBS[name].env;
    for (const bad of ['soon', '', ' ', '-1', 'NaN', 'Infinity', '0x10']) {
      const r = knobFromEnv({ [env]: bad }, name);
      expect(r, `${env}=${JSON.stringify(bad)}`).toMatchObject({ ok: false, error: { exit: 2, code: 'invalid_setting' } });
      if (!r.ok) expect(r.error.message.startsWith(`${env} `)).toBe(true);
    }
  });

  it('a count takes whole numbers only; seconds take fractions', () => {
    expect(checkKnob('maxRetries', '1.5', 'OH_HAI_MAX_RETRIES').ok).toBe(false);
    expect(checkKnob('waitSeconds', '0.25', 'OH_HAI_WAIT_SECONDS')).toEqual({ ok: true, value: 0.25 });
  });

  it('the wait bound is at most a day, and the refusal says a longer one is likely milliseconds', () => {
    expect(checkKnob('waitSeconds', '86400', '--wait')).toEqual({ ok: true, value: 86_400 });
    const ms = checkKnob('waitSeconds', '540000', '--wait');
    expect(ms.ok).toBe(false);
    if (!ms.ok)
      expect(ms.error).toMatchObject({
        exit: 2,
        code: 'invalid_setting',
        message: '--wait is 540000: it must be at most 86400 (a day); a longer wait is almost always milliseconds given as seconds',
      });
  });

  it('says the default when a variable is refused, so the fix is in the message', () => {
    const r = knobFromEnv({ OH_HAI_HEARTBEAT_MS: 'often' }, 'heartbeatMs');
    expect(r).toMatchObject({
      ok: false,
      error: { message: 'OH_HAI_HEARTBEAT_MS must be a number of milliseconds, got the string "often"; unset it for the default (5000)' },
    });
  });

  it('holds a cap to its floor only when both are read', () => {
    const env = { OH_HAI_BACKOFF_MIN_MS: '500', OH_HAI_BACKOFF_MAX_MS: '100' };
    expect(readKnobs(env, ['backoffMinMs', 'backoffMaxMs'])).toMatchObject({ ok: false, error: { exit: 2, message: /cap must be at least the floor/ } });
    expect(readKnobs(env, ['backoffMaxMs'])).toEqual({ ok: true, value: { backoffMaxMs: 100 } });
  });

  it('adopting a 0.9 home refuses a bad OH_HAI_STOP_WAIT_MS before it touches anything (it used to fall back silently)', async () => {
    const stateDir = { dir: '/nonexistent' } as StateDir;
    const r = await adoptLegacyHome({
      stateDir,
      legacyDir: '/nonexistent/.oh-hai/bridge',
      io: { env: { OH_HAI_STOP_WAIT_MS: 'forever' }, cwd: '/', clock: fakeClock(0), pid: 1 },
      hubUrl: 'https://hub.example',
      token: 't',
      agentId: 'agt_a',
      pinned: null,
    });
    expect(r).toMatchObject({ ok: false, error: { exit: 2, code: 'invalid_setting', message: /^OH_HAI_STOP_WAIT_MS must be a number of milliseconds/ } });
  });
});
