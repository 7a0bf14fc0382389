/**
 * The codes a Hub start fails with when its database cannot be used (unreachable, or
 * migrated by a newer Hub); their messages are already redacted. Kept apart from
 * src/hub/server/postgres so the CLI can name them without loading `pg`.
 */
export const DATABASE_UNAVAILABLE = 'HUB_DATABASE_UNAVAILABLE';
export const SCHEMA_TOO_NEW = 'HUB_DATABASE_TOO_NEW';
export const DATABASE_REFUSED: ReadonlySet<string> = new Set([DATABASE_UNAVAILABLE, SCHEMA_TOO_NEW]);

/**
 * A store asked for work after the Hub closed it (a request or background write that outlived
 * the shutdown's wait): answered 503 like any request refused while stopping, never a stack.
 */
export const STORE_CLOSED = 'HUB_STORE_CLOSED';

export const storeClosed = (): Error => Object.assign(new Error('this Hub instance is stopping'), { code: STORE_CLOSED });

/**
 * Another instance's migration holds the database's tables (postgres/migrating.ts): a request is
 * refused with 503 `unavailable` and `Retry-After` at once, instead of waiting on the migration's
 * locks for its whole length (seconds per million rows) past its client's patience.
 */
export const DATABASE_MIGRATING = 'HUB_DATABASE_MIGRATING';

/** Seconds a refused client is told to wait: the instance looks again every second (postgres/migrating.ts); a balancer tries another instance at once. */
export const MIGRATING_RETRY_AFTER_SECONDS = 1;

export const databaseMigrating = (why: string): Error =>
  Object.assign(new Error(`${why}; retry (this instance serves again once it ends)`), { code: DATABASE_MIGRATING });

/**
 * The database was migrated past this instance's code (a newer version's migration committed while
 * it served): refused like a migration holding the tables, from then on. The code would misread the
 * newer tables, as a start refuses to (SCHEMA_TOO_NEW); a balancer sends the retry to another instance.
 */
export const databaseOutdated = (why: string): Error =>
  Object.assign(new Error(`${why}; retry (an instance of the newer version serves it)`), { code: DATABASE_MIGRATING });

/**
 * Work refused for another version's migration. The migration watch logs when that starts and ends,
 * so background work (the sweep, presence and stream-end writes, pushes) does not log each refusal.
 */
export const refusedForMigration = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === DATABASE_MIGRATING;
