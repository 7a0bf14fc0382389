import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../util/clock.js';

/** What the signed-in human's browser is bound to. The cookie carries only `id`. */
export interface WebSession {
  id: string;
  /** Per-session CSRF token, rendered into every form and checked on every POST. */
  csrf: string;
  /** The account's human token, held in server memory only: never in a cookie, URL or log. */
  signedIn: SignedIn;
  /** Shown once on the next page view, then dropped (e.g. a freshly minted agent token). */
  flash: Flash | null;
  lastSeenAt: number;
}

export interface SignedIn {
  token: string;
  accountId: string;
  accountLabel: string | null;
}

export interface Flash {
  kind: 'ok' | 'error';
  /** Plain text; rendered escaped. */
  text: string;
  /** A one-time secret shown under the text (a minted agent token). */
  secret?: string;
}

const randomId = (): string => randomBytes(32).toString('base64url');

/**
 * Server-side map of signed-in browser sessions. A session exists only from a successful sign-in
 * (the sign-in form's CSRF token is stateless, web/sign-in.ts), so nobody without the human token
 * can add one: the bound and the least-recently-used eviction only ever weigh the operator's own
 * browsers. Idle sessions expire.
 */
export class SessionStore {
  private readonly sessions = new Map<string, WebSession>();

  constructor(
    private readonly clock: Clock,
    private readonly idleMs: number,
    private readonly maxSessions: number,
  ) {}

  get(id: string | undefined): WebSession | null {
    if (!id) return null;
    const s = this.sessions.get(id);
    if (!s) return null;
    if (this.clock.now() - s.lastSeenAt > this.idleMs) {
      this.sessions.delete(id);
      return null;
    }
    s.lastSeenAt = this.clock.now();
    // Keep the map in least-recently-used order for eviction.
    this.sessions.delete(id);
    this.sessions.set(id, s);
    return s;
  }

  /** A sign-in: a new session (new id, new CSRF token), replacing the browser's old one if any. */
  signIn(old: WebSession | null, signedIn: SignedIn): WebSession {
    if (old) this.sessions.delete(old.id);
    this.prune();
    while (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const s: WebSession = { id: randomId(), csrf: randomId(), signedIn, flash: null, lastSeenAt: this.clock.now() };
    this.sessions.set(s.id, s);
    return s;
  }

  destroy(id: string): void {
    this.sessions.delete(id);
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [id, s] of this.sessions) if (now - s.lastSeenAt > this.idleMs) this.sessions.delete(id);
  }
}

/** Length-checked constant-time comparison (timingSafeEqual throws on different lengths). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

export const SESSION_COOKIE = 'oh_hai_web';

export function sessionCookie(id: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
}

/** The session id from a Cookie header, or undefined. */
export function readSessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}
