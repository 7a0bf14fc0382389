import { createHash } from 'node:crypto';
import path from 'node:path';

/**
 * The `home` this consumer presents to the Hub (MA2H-Consumer header, session register):
 * a digest of the entry's absolute path. Stable across restarts of the same entry, so a
 * successor adopts (and replaces) its predecessor's hold; distinct for another state root,
 * whose consumer is another home. 32 hex characters fit the header's value grammar.
 */
export const consumerHome = (entryDir: string): string => createHash('sha256').update(path.resolve(entryDir)).digest('hex').slice(0, 32);
