/**
 * A database URL may carry a password. It is never printed or logged: every message that
 * could hold the URL or the password goes through {@link redactor} first.
 */
export interface DatabaseUrl {
  /** The URL as given (with its password, if any): only ever handed to the driver. */
  url: string;
  /** The URL with any password replaced by `***`: safe to print. */
  shown: string;
  password: string | null;
}

export function parseDatabaseUrl(raw: string): { ok: true; value: DatabaseUrl } | { ok: false; reason: string } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, reason: 'the database URL is not a URL; give postgres://user@host:port/dbname (the password in PGPASSFILE or the environment)' };
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return { ok: false, reason: `the database URL must start with postgres:// or postgresql:// (got ${u.protocol}//…)` };
  }
  const password = u.password === '' ? null : decodeURIComponent(u.password);
  const shown = new URL(raw);
  if (shown.password !== '') shown.password = '***';
  for (const key of [...shown.searchParams.keys()]) if (/pass/i.test(key)) shown.searchParams.set(key, '***');
  const queryPassword = [...u.searchParams.entries()].find(([k]) => /pass/i.test(k))?.[1] ?? null;
  return { ok: true, value: { url: raw, shown: shown.toString(), password: password ?? queryPassword } };
}

/** Replace the URL and its password wherever they appear in `text`. */
export function redactor(db: DatabaseUrl): (text: string) => string {
  const secrets = [db.url, ...(db.password !== null && db.password.length > 0 ? [db.password, encodeURIComponent(db.password)] : [])];
  return (text) => {
    let out = text;
    for (const s of secrets) out = out.split(s).join(s === db.url ? db.shown : '***');
    return out;
  };
}
