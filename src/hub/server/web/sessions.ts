import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../util/clock.js';

/** What the signed-in human's browser is bound to. The cookie carries only `id`. */
export interface WebSession {
  id: string;
  /** Per-session CSRF token, rendered into every form and checked on every POST. */
  csrf: string;
  /** The account's human token, held in server memory only: never in a cookie, URL or log. */
  signedIn: { token: string; accountId: string; accountLabel: string | null } | null;
  /** Shown once on the next page view, then dropped (e.g. a freshly minted agent token). */
  flash: Flash | null;
  lastSeenAt: number;
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
 * Server-side map of browser sessions. Idle sessions expire; the map is bounded so a
 * flood of anonymous visits cannot grow memory without limit (the oldest go first).
 */
export class SessionStore {
  private readonly sessions = new Map<string, WebSession>();

  constructor(
    private readonly clock: Clock,
    private readonly idleMs: number,
    private readonly maxSessions: number,
  ) {}

  /** A fresh, anonymous session (used for the sign-in form's CSRF token too). */
  create(): WebSession {
    this.prune();
    while (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const s: WebSession = { id: randomId(), csrf: randomId(), signedIn: null, flash: null, lastSeenAt: this.clock.now() };
    this.sessions.set(s.id, s);
    return s;
  }

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

  /** Signing in replaces the session (new id, new CSRF token) so a planted id is worthless. */
  signIn(old: WebSession, signedIn: NonNullable<WebSession['signedIn']>): WebSession {
    this.sessions.delete(old.id);
    const s = this.create();
    s.signedIn = signedIn;
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
