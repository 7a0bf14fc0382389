import { createHmac, hkdfSync } from 'node:crypto';
import type { Clock } from '../../../util/clock.js';
import { sameSecret } from './sessions.js';

/** How long a sign-in form stays good after it was served. */
const FORM_TTL_MS = 3600_000;

/** Instances' clocks may differ this much: a form issued by one is not refused by another as from the future. */
const CLOCK_SKEW_MS = 60_000;

/**
 * The sign-in form's CSRF token without a server-side session: the instant it was issued and an
 * HMAC of it under a key derived (HKDF) from the deployment's signing key, so a form served by
 * one instance signs in through any other behind the balancer. Serving the form stores nothing,
 * so a flood of anonymous GET /login cannot push a signed-in operator out of the session store
 * (issue 18, finding 6); a browser session is created only by a sign-in.
 */
export class LoginForms {
  private readonly key: Buffer;

  constructor(
    private readonly clock: Clock,
    signingKey: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', signingKey, '', 'oh-hai web sign-in forms', 32));
  }

  issue(): string {
    const at = String(this.clock.now());
    return `${at}.${this.mac(at)}`;
  }

  /** Whether `token` is one this deployment issued within the last hour. */
  check(token: string): boolean {
    const dot = token.indexOf('.');
    if (dot <= 0) return false;
    const at = token.slice(0, dot);
    if (!/^\d{1,16}$/.test(at) || !sameSecret(token.slice(dot + 1), this.mac(at))) return false;
    const age = this.clock.now() - Number(at);
    return age >= -CLOCK_SKEW_MS && age <= FORM_TTL_MS;
  }

  private mac(at: string): string {
    return createHmac('sha256', this.key).update(`login-form:${at}`).digest('base64url');
  }
}

/** Failed guesses are forgotten after this long without another. */
const FORGET_MS = 15 * 60_000;
/** The longest a failed sign-in is held. */
const MAX_DELAY_MS = 30_000;
/** Sign-ins from one source waiting their turn; past it the next is refused with 429 at once. */
const MAX_WAITING = 4;
/** Sources remembered at most (the least recently failing go first). */
const MAX_SOURCES = 10_000;

interface Source {
  failures: number;
  lastFailureAt: number;
  /** Settles when the source's attempt in progress has been answered. */
  turn: Promise<void>;
  waiting: number;
}

/** Hold a refused sign-in's answer. */
export const hold = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export type Attempt = { kind: 'answered' } | { kind: 'busy'; retryAfterSeconds: number };

/**
 * A delay on failed web sign-ins, per source address. Attempts from one source are checked one
 * at a time (so parallel requests gain nothing), and each failed one is answered only after a
 * delay that doubles with the source's recent failures: `baseMs`, 2×, 4× … up to 30 s. A success
 * clears the source. Behind a reverse proxy every browser shares the proxy's address: the delay
 * then applies to all of them together, which still bounds the guesses per second.
 */
export class SignInThrottle {
  private readonly sources = new Map<string, Source>();

  constructor(
    private readonly clock: Clock,
    private readonly baseMs: number,
  ) {}

  /**
   * Run one sign-in attempt from `source` in its turn: `run` checks the token and answers the
   * browser; on a refused token it calls `refused` and holds its answer for the delay returned.
   */
  async attempt(source: string, run: () => Promise<void>): Promise<Attempt> {
    const s = this.source(source);
    if (s.waiting >= MAX_WAITING) return { kind: 'busy', retryAfterSeconds: Math.ceil(this.delayMs(s.failures + 1) / 1000) };
    s.waiting += 1;
    const previous = s.turn;
    let done!: () => void;
    s.turn = new Promise<void>((resolve) => (done = resolve));
    try {
      await previous;
      await run();
      return { kind: 'answered' };
    } finally {
      s.waiting -= 1;
      done();
      if (s.waiting === 0 && s.failures === 0) this.sources.delete(source);
    }
  }

  /** Record a refused token; returns how long to hold its answer. */
  refused(source: string): number {
    const s = this.source(source);
    s.failures += 1;
    s.lastFailureAt = this.clock.now();
    // Most recently failing last, so the bound drops the quietest source first.
    this.sources.delete(source);
    this.sources.set(source, s);
    return this.delayMs(s.failures);
  }

  succeeded(source: string): void {
    const s = this.sources.get(source);
    if (s) s.failures = 0;
  }

  private delayMs(failures: number): number {
    return Math.min(MAX_DELAY_MS, this.baseMs * 2 ** Math.min(30, failures - 1));
  }

  private source(key: string): Source {
    let s = this.sources.get(key);
    if (s && s.failures > 0 && this.clock.now() - s.lastFailureAt > FORGET_MS) s.failures = 0;
    if (!s) {
      while (this.sources.size >= MAX_SOURCES) {
        const oldest = this.sources.keys().next().value;
        if (oldest === undefined) break;
        this.sources.delete(oldest);
      }
      s = { failures: 0, lastFailureAt: 0, turn: Promise.resolve(), waiting: 0 };
      this.sources.set(key, s);
    }
    return s;
  }
}
