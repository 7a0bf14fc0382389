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
