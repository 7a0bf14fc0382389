import { createHash } from 'node:crypto';
import path from 'node:path';
import { adoptedHome } from '../spool/legacy.js';

/**
 * The `home` this consumer presents to the Hub (MA2H-Consumer header, session register):
 * a digest of the entry's absolute path. Stable across restarts of the same entry, so a
 * successor adopts (and replaces) its predecessor's hold; distinct for another state root,
 * whose consumer is another home. 32 hex characters fit the header's value grammar.
 *
 * An entry that adopted a 0.9 home presents that home's value instead (docs/legacy-0.9.md):
 * the Hub knows the adopted session's holder by it, and refuses a connect from any other
 * home for a minute after the 0.9 connection was last seen.
 */
export const consumerHome = (stateDirPath: string): string =>
  adoptedHome(stateDirPath) ?? createHash('sha256').update(path.resolve(stateDirPath)).digest('hex').slice(0, 32);
