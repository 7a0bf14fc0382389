import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HubClock } from '../../../src/consumer/hub-clock.js';
import { pollRound, principalRound, streamRound, type RoundContext } from '../../../src/consumer/rounds.js';
import type { SessionKeeper } from '../../../src/consumer/session.js';
import type { HubClient, HubFailure, HubResult, StreamEnd, StreamOptions } from '../../../src/hub/client/index.js';
import type { Capability, DrainResult, SessionLease } from '../../../src/hub/contract/index.js';
import type { ConsumerSettings } from '../../../src/spool/index.js';
import { fakeClock, systemClock } from '../../../src/util/clock.js';

/**
 * One round of each way of draining, against a scripted Hub: what a round reports (progress,
 * renewals, the Hub's clock, batches to deliver) and what it returns (go again, a fault, a stop).
 * Timers are vitest's, so a round's pause is measured on the fake clock, never waited for.
 */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const LEASE: SessionLease = { id: 'sess_a', expires_at: '2026-09-18T15:00:00.000Z', lease_seconds: 900 };
const HUB_DATE = 'Fri, 18 Sep 2026 14:00:05 GMT';
const NOW = Date.parse('2026-09-18T14:00:00.000Z');

const capability = (maxWait: number | null = 20): Capability => ({
  protocol: 'MA2H',
  version: '0.5',
  hub: null,
  server_time: null,
  inbound: { session_param: true, stream_url: null, max_wait_seconds: maxWait, stream_max_hold_seconds: null, keepalive_seconds: null },
  signature_algs: ['hmac-sha256'],
  replay_window_seconds: null,
  session: null,
  account: null,
});

type Script = {
  stream?: (opts: StreamOptions) => Promise<StreamEnd>;
  drain?: (opts: { session?: string | null; wait?: number }) => HubResult<DrainResult> | Promise<HubResult<DrainResult>>;
};

function round(script: Script, opts: { capability?: Capability; interval?: number; delivers?: number; stopped?: boolean } = {}) {
  const clock = fakeClock(NOW);
  const events: string[] = [];
  const renewals: SessionLease[] = [];
  const delivered: { raws: readonly unknown[]; session: string | null }[] = [];
  const drains: { session?: string | null; wait?: number }[] = [];
  const hubClock = new HubClock(clock);
  const client: Pick<HubClient, 'openStream' | 'drain'> = {
    openStream: (_sid, o = {}) => (script.stream ?? (() => Promise.resolve({ kind: 'hold_bound' as const })))(o),
    drain: (o = {}) => {
      drains.push({ session: o.session, wait: o.wait });
      return Promise.resolve((script.drain ?? (() => ok({ session: null, messages: [] })))(o));
    },
  };
  const keeper: Pick<SessionKeeper, 'renewed'> = { renewed: (lease) => renewals.push(lease) };
  const ctx: RoundContext = {
    // A round calls only openStream() and drain().
    client: client as HubClient,
    capability: opts.capability ?? capability(),
    identity: { home: 'h', host: 'x', pid: 1 },
    settings: { interval_seconds: opts.interval ?? 2 } as ConsumerSettings,
    // Time is read off the fake clock; a round's pause waits on vitest's faked setTimeout.
    clock: { ...clock, sleep: systemClock.sleep, setTimer: systemClock.setTimer },
    hubClock,
    signal: new AbortController().signal,
    stopped: () => opts.stopped ?? false,
    opened: () => events.push('opened'),
    connected: () => events.push('connected'),
    failureContext: (operation, sessionId) => ({ operation, sessionId, pinned: null }),
    deliver: (raws, session) => {
      delivered.push({ raws, session });
      events.push(`deliver ${raws.length}`);
      return Promise.resolve(opts.delivers ?? raws.length);
    },
  };
  return { ctx, keeper: keeper as SessionKeeper, clock, events, renewals, delivered, drains, hubClock };
}

const ok = (value: DrainResult): HubResult<DrainResult> => ({ ok: true, status: 200, value, serverDate: HUB_DATE });
const failed = (failure: HubFailure): HubResult<DrainResult> => ({ ok: false, failure });
const http = (status: number, code: string): HubFailure => ({
  kind: 'http',
  status,
  code,
  message: code,
  details: {},
  retryAfterSeconds: status === 429 ? 7 : null,
});

/** Settles `p` while advancing fake time `ms` (and reports whether it settled before that). */
async function settlesWithin<T>(p: Promise<T>, ms: number): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await vi.advanceTimersByTimeAsync(ms);
  return done;
}

describe('streamRound', () => {
  it('an open marks the consumer opened (not progress), notes the Hub clock and renews the lease', async () => {
    const r = round({
      stream: async (o) => {
        await o.onOpen?.({ session: 'sess_a', expires_at: LEASE.expires_at, lease_seconds: 900, hold_ms: 30_000, stream_max_hold_seconds: null }, HUB_DATE);
        return { kind: 'eof' };
      },
    });
    const d = await streamRound(r.ctx, r.keeper, 'sess_a');
    expect(r.events).toEqual(['opened']);
    expect(r.renewals).toEqual([LEASE]);
    expect(r.hubClock.reading).toEqual({ offsetMs: 5000, source: `the Hub's Date header at ${HUB_DATE}` });
    expect(d).toEqual({
      kind: 'fault',
      message: 'stream on sess_a: the connection ended without a reconnect or closed event (dropped mid-hold)',
      retryAfterSeconds: null,
    });
  });

  it('entries are delivered under the session; only new mail is progress', async () => {
    const r = round(
      {
        stream: async (o) => {
          await o.onEntries?.({ messages: ['a', 'b'] });
          return { kind: 'eof' };
        },
      },
      { delivers: 0 },
    );
    await streamRound(r.ctx, r.keeper, 'sess_a');
    expect(r.delivered).toEqual([{ raws: ['a', 'b'], session: 'sess_a' }]);
    expect(r.events).toEqual(['deliver 2']);
    const fresh = round({
      stream: async (o) => {
        await o.onEntries?.({ messages: ['a'] });
        return { kind: 'eof' };
      },
    });
    await streamRound(fresh.ctx, fresh.keeper, 'sess_a');
    expect(fresh.events).toEqual(['deliver 1', 'connected']);
  });

  it('a hold that reaches its bound is progress, and the next hold starts at once', async () => {
    const r = round({});
    expect(await streamRound(r.ctx, r.keeper, 'sess_a')).toBeNull();
    expect(r.events).toEqual(['connected']);
  });

  it('a closed event is the decision its reason names', async () => {
    const r = round({ stream: () => Promise.resolve({ kind: 'closed', reason: 'closed_by_operator' }) });
    expect(await streamRound(r.ctx, r.keeper, 'sess_a')).toMatchObject({
      kind: 'stop',
      stop: { exit: 14, message: /^stream on sess_a: the Hub ended the stream/ },
    });
  });

  it('a failed connect is classified as a stream connect', async () => {
    const r = round({ stream: () => Promise.resolve({ kind: 'failure', failure: http(503, 'unavailable') }) });
    expect(await streamRound(r.ctx, r.keeper, 'sess_a')).toEqual({
      kind: 'fault',
      message: 'stream connect on sess_a: HTTP 503 unavailable: unavailable',
      retryAfterSeconds: null,
    });
  });

  it('once stopped, whatever ended the stream is not acted on', async () => {
    const r = round({ stream: () => Promise.resolve({ kind: 'closed', reason: 'closed' }) }, { stopped: true });
    expect(await streamRound(r.ctx, r.keeper, 'sess_a')).toBeNull();
    expect(r.events).toEqual([]);
  });
});

describe('pollRound', () => {
  it('a drain with new mail is progress, renews, delivers, and drains again at once', async () => {
    const r = round({ drain: () => ok({ session: LEASE, messages: ['a'] }) });
    expect(await settlesWithin(pollRound(r.ctx, r.keeper, 'sess_a'), 0)).toBe(true);
    expect(r.drains).toEqual([{ session: 'sess_a', wait: undefined }]);
    expect(r.events).toEqual(['connected', 'deliver 1']);
    expect(r.renewals).toEqual([LEASE]);
    expect(r.hubClock.reading?.offsetMs).toBe(5000);
  });

  it('a drain with nothing new waits the interval before the next', async () => {
    const r = round({ drain: () => ok({ session: null, messages: [] }) }, { interval: 2 });
    const p = pollRound(r.ctx, r.keeper, 'sess_a');
    expect(await settlesWithin(p, 1999)).toBe(false);
    expect(await settlesWithin(p, 1)).toBe(true);
    expect(await p).toBeNull();
    expect(r.renewals).toEqual([]);
  });

  it('a failed drain is classified as a drain, with no progress and nothing delivered', async () => {
    const r = round({ drain: () => failed(http(429, 'rate_limited')) });
    expect(await pollRound(r.ctx, r.keeper, 'sess_a')).toEqual({
      kind: 'fault',
      message: 'drain on sess_a: HTTP 429 rate_limited: rate_limited',
      retryAfterSeconds: 7,
    });
    expect(r.events).toEqual([]);
  });

  it('once stopped, the answer is not acted on', async () => {
    const r = round({ drain: () => failed(http(401, 'unauthorized')) }, { stopped: true });
    expect(await pollRound(r.ctx, r.keeper, 'sess_a')).toBeNull();
    expect(r.events).toEqual([]);
  });
});

describe('principalRound', () => {
  it("holds the drain for the Hub's max wait, with no session, and delivers on the principal leg", async () => {
    const r = round({ drain: () => ok({ session: null, messages: ['a'] }) }, { capability: capability(17) });
    expect(await settlesWithin(principalRound(r.ctx, true), 0)).toBe(true);
    expect(r.drains).toEqual([{ session: undefined, wait: 17 }]);
    expect(r.delivered).toEqual([{ raws: ['a'], session: null }]);
    expect(r.events).toEqual(['connected', 'deliver 1']);
    expect(r.hubClock.reading?.offsetMs).toBe(5000);
  });

  it('unheld (nothing answered since the start or the last fault): asks without waiting, and the next drain goes at once', async () => {
    const r = round({}, { capability: capability(17), interval: 2 });
    expect(await settlesWithin(principalRound(r.ctx, false), 0)).toBe(true);
    expect(r.drains).toEqual([{ session: undefined, wait: undefined }]);
    expect(r.events).toEqual(['connected', 'deliver 0']);
  });

  it('waits 25 s when the Hub advertises no max wait', async () => {
    const r = round({}, { capability: capability(null) });
    await settlesWithin(principalRound(r.ctx, true), 2000);
    expect(r.drains[0]?.wait).toBe(25);
  });

  // Monotonic clocks do not start at 0 (a process up a minute): the elapsed time is a difference.
  it.each([0, 60_000])('the interval is a floor from the start of the drain, not a pause after it (monotonic at %i ms)', async (upMs) => {
    const r = round(
      {
        drain: () => {
          r.clock.advance(500);
          return ok({ session: null, messages: [] });
        },
      },
      { interval: 2 },
    );
    r.clock.advance(upMs);
    const p = principalRound(r.ctx, true);
    expect(await settlesWithin(p, 1499)).toBe(false);
    expect(await settlesWithin(p, 1)).toBe(true);
  });

  it('a failed drain is classified as a principal drain', async () => {
    const r = round({ drain: () => failed({ kind: 'network', message: 'ECONNREFUSED' }) });
    expect(await principalRound(r.ctx, true)).toEqual({ kind: 'fault', message: 'principal drain: network error: ECONNREFUSED', retryAfterSeconds: null });
    expect(r.events).toEqual([]);
  });

  it('once stopped, the answer is not acted on', async () => {
    const r = round({ drain: () => ok({ session: null, messages: ['a'] }) }, { stopped: true });
    expect(await principalRound(r.ctx, true)).toBeNull();
    expect(r.delivered).toEqual([]);
  });
});
