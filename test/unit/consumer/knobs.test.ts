import { describe, expect, it } from 'vitest';
import { readConsumerKnobs as readKnobs } from '../../../src/consumer/index.js';
import { HubClock } from '../../../src/consumer/hub-clock.js';
import { fakeClock } from '../../../src/util/clock.js';

describe('readKnobs', () => {
  it('defaults to the product doc figures', () => {
    expect(readKnobs({})).toEqual({
      ok: true,
      value: { heartbeatMs: 5000, backoffMinMs: 1000, backoffMaxMs: 30_000, staleHolderSeconds: 60, cursorPollMs: 1000, replayWindowSeconds: null },
    });
  });

  it('takes fractional values (tests use sub-second intervals)', () => {
    const k = readKnobs({ OH_HAI_HEARTBEAT_MS: '150', OH_HAI_STALE_HOLDER_SECONDS: '0.5', OH_HAI_REPLAY_WINDOW_SECONDS: '30' });
    expect(k).toMatchObject({ ok: true, value: { heartbeatMs: 150, staleHolderSeconds: 0.5, replayWindowSeconds: 30 } });
  });

  it.each([
    ['OH_HAI_HEARTBEAT_MS', '0'],
    ['OH_HAI_BACKOFF_MIN_MS', 'soon'],
    ['OH_HAI_CURSOR_POLL_MS', '-5'],
    ['OH_HAI_REPLAY_WINDOW_SECONDS', 'NaN'],
  ])('%s=%s is a usage error naming the variable', (name, value) => {
    const k = readKnobs({ [name]: value });
    expect(k.ok).toBe(false);
    if (!k.ok) {
      expect(k.error.exit).toBe(2);
      expect(k.error.message).toMatch(new RegExp(`^${name} `));
    }
  });

  it('refuses a backoff cap below its floor', () => {
    const k = readKnobs({ OH_HAI_BACKOFF_MIN_MS: '500', OH_HAI_BACKOFF_MAX_MS: '100' });
    expect(k).toMatchObject({ ok: false, error: { exit: 2, message: /cap must be at least the floor/ } });
  });
});

describe('HubClock', () => {
  it("measures the Hub's clock against ours at the moment of reading", () => {
    const clock = fakeClock(Date.parse('2026-09-18T14:00:00.000Z'));
    const hub = new HubClock(clock);
    expect(hub.reading).toBeNull();
    hub.note('2026-09-18T13:00:00.500Z', 'server_time');
    expect(hub.reading).toEqual({ offsetMs: -3_599_500, source: "the Hub's server_time at 2026-09-18T13:00:00.500Z" });
  });

  it('a Date header stands in only when no server_time was read (it has whole seconds only)', () => {
    const clock = fakeClock(Date.parse('2026-09-18T14:00:00.000Z'));
    const hub = new HubClock(clock);
    hub.note('Fri, 18 Sep 2026 14:00:02 GMT', 'date');
    expect(hub.reading?.offsetMs).toBe(2000);
    hub.note('2026-09-18T14:00:00.250Z', 'server_time');
    hub.note('Fri, 18 Sep 2026 14:00:09 GMT', 'date');
    expect(hub.reading?.offsetMs).toBe(250);
  });

  it('ignores what it cannot parse', () => {
    const hub = new HubClock(fakeClock(0));
    hub.note('not a date', 'date');
    hub.note(null, 'server_time');
    expect(hub.reading).toBeNull();
  });
});
