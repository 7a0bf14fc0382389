/**
 * The codes a Hub start fails with when its database cannot be used (unreachable, or
 * migrated by a newer Hub); their messages are already redacted. Kept apart from
 * src/hub/server/postgres so the CLI can name them without loading `pg`.
 */
export const DATABASE_UNAVAILABLE = 'HUB_DATABASE_UNAVAILABLE';
export const SCHEMA_TOO_NEW = 'HUB_DATABASE_TOO_NEW';
export const DATABASE_REFUSED: ReadonlySet<string> = new Set([DATABASE_UNAVAILABLE, SCHEMA_TOO_NEW]);
