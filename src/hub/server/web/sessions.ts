import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../util/clock.js';
import type { Store } from '../sql.js';

/** What the signed-in human's browser is bound to. The cookie carries only `id`. */
export interface WebSession {
  id: string;
  /** Per-session CSRF token, rendered into every form and checked on every POST. */
  csrf: string;
  /** The account's human token: never in a cookie, URL or log; in the store only sealed (see {@link SessionStore}). */
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

/** What is sealed in a session's row: everything a copy of the database must not hand out. */
interface Sealed {
  csrf: string;
  signedIn: SignedIn;
  flash: Flash | null;
}

/**
 * The row's secrets sealed with AES-256-GCM under a key derived (HKDF) from the deployment's
 * signing key, bound to the row's id hash: every instance of a deployment shares the key, so any
 * of them opens a session another made; a copy of the database alone opens none.
 */
class Seal {
  private readonly key: Buffer;
  constructor(signingKey: string) {
    this.key = Buffer.from(hkdfSync('sha256', signingKey, '', 'oh-hai web inbox sessions', 32));
  }
  close(idHash: string, value: Sealed): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    c.setAAD(Buffer.from(idHash));
    const body = Buffer.concat([c.update(JSON.stringify(value), 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url');
  }
  /** Null when it does not open (another signing key, a tampered row). */
  open(idHash: string, sealed: string): Sealed | null {
    try {
      const raw = Buffer.from(sealed, 'base64url');
      const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      d.setAAD(Buffer.from(idHash));
      d.setAuthTag(raw.subarray(12, 28));
      return JSON.parse(Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')) as Sealed;
    } catch {
      return null;
    }
  }
}

/** The store keeps a hash of the cookie's id, so a row read from the database is no cookie. */
const idHash = (id: string): string => createHash('sha256').update(id).digest('base64url');

export interface SessionStoreOptions {
  /** The Hub's store, once it is open (the web inbox is mounted before the Hub starts). */
  store: () => Store;
  clock: Clock;
  /** The deployment's signing key: the sealing key is derived from it. */
  signingKey: string;
  idleMs: number;
  maxSessions: number;
}

/**
 * Signed-in browser sessions, kept in the Hub's store (the `web_sessions` table), so a sign-in
 * made through one instance holds on every instance behind the balancer. A session exists only
 * from a successful sign-in (the sign-in form's CSRF token is stateless, web/sign-in.ts), so
 * nobody without the human token can add one: the bound and the least-recently-used eviction
 * only ever weigh the operator's own browsers. Idle sessions expire; the last-seen instant is
 * written at most once per {@link touchMs} of use, not on every page view.
 */
export class SessionStore {
  private readonly seal: Seal;
  private readonly touchMs: number;

  constructor(private readonly o: SessionStoreOptions) {
    this.seal = new Seal(o.signingKey);
    this.touchMs = Math.min(60_000, o.idleMs / 10);
  }

  async get(id: string | undefined): Promise<WebSession | null> {
    if (!id) return null;
    const key = idHash(id);
    const store = this.o.store();
    const row = await store.read.get<{ sealed: string; last_seen_at: number }>('SELECT sealed, last_seen_at FROM web_sessions WHERE id_hash = ?', key);
    if (row === null) return null;
    const now = this.o.clock.now();
    const open = now - row.last_seen_at > this.o.idleMs ? null : this.seal.open(key, row.sealed);
    if (open === null) {
      await this.destroy(id);
      return null;
    }
    if (now - row.last_seen_at >= this.touchMs) {
      await store.write((tx) => tx.run('UPDATE web_sessions SET last_seen_at = ? WHERE id_hash = ?', now, key));
    }
    return { id, csrf: open.csrf, signedIn: open.signedIn, flash: open.flash, lastSeenAt: now };
  }

  /** A sign-in: a new session (new id, new CSRF token), replacing the browser's old one if any. */
  async signIn(old: WebSession | null, signedIn: SignedIn): Promise<WebSession> {
    const now = this.o.clock.now();
    const s: WebSession = { id: randomId(), csrf: randomId(), signedIn, flash: null, lastSeenAt: now };
    const key = idHash(s.id);
    await this.o.store().write(async (tx) => {
      if (old) await tx.run('DELETE FROM web_sessions WHERE id_hash = ?', idHash(old.id));
      await tx.run('DELETE FROM web_sessions WHERE last_seen_at < ?', now - this.o.idleMs);
      const held = (await tx.get<{ n: number }>('SELECT CAST(COUNT(*) AS INTEGER) AS n FROM web_sessions'))!.n;
      if (held >= this.o.maxSessions) {
        await tx.run(
          'DELETE FROM web_sessions WHERE id_hash IN (SELECT id_hash FROM web_sessions ORDER BY last_seen_at, created_at LIMIT ?)',
          held - this.o.maxSessions + 1,
        );
      }
      await tx.run(
        'INSERT INTO web_sessions (id_hash, sealed, last_seen_at, created_at) VALUES (?, ?, ?, ?)',
        key,
        this.seal.close(key, { csrf: s.csrf, signedIn, flash: null }),
        now,
        now,
      );
    });
    return s;
  }

  /** Keep `flash` for the session's next page view (on whichever instance serves it). */
  async setFlash(s: WebSession, flash: Flash | null): Promise<void> {
    s.flash = flash;
    const key = idHash(s.id);
    const sealed = this.seal.close(key, { csrf: s.csrf, signedIn: s.signedIn, flash });
    await this.o.store().write((tx) => tx.run('UPDATE web_sessions SET sealed = ? WHERE id_hash = ?', sealed, key));
  }

  /** The flash to show now, removed from the session so it shows once. */
  async takeFlash(s: WebSession): Promise<Flash | null> {
    const f = s.flash;
    if (f !== null) await this.setFlash(s, null);
    return f;
  }

  async destroy(id: string): Promise<void> {
    await this.o.store().write((tx) => tx.run('DELETE FROM web_sessions WHERE id_hash = ?', idHash(id)));
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
