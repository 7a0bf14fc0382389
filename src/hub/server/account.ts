import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../util/fs-durable.js';
import type { Account } from './core.js';
import { hashToken, newId, newToken } from './ids.js';
import { HUMAN_TOKEN_FILE } from './files.js';
import { getMeta, setMeta, type Db } from './store.js';

export interface AccountBoot {
  account: Account;
  /** True when this start created the account (first start on this data dir). */
  created: boolean;
  humanTokenPath: string;
}

/**
 * Make sure the data dir has an account and a human token. The token file (0600) is the
 * only place the token lives; the store keeps its hash. A token file that exists wins,
 * so an operator can rotate the token by replacing the file and restarting.
 */
export function bootAccount(db: Db, dataDir: string, label: string): AccountBoot {
  const humanTokenPath = path.join(dataDir, HUMAN_TOKEN_FILE);
  let id = getMeta(db, 'account_id');
  const created = id === null;
  if (id === null) {
    id = newId('acct');
    setMeta(db, 'account_id', id);
    setMeta(db, 'account_label', label);
    setMeta(db, 'agent_messaging', '1');
  }
  let token = existsSync(humanTokenPath) ? readFileSync(humanTokenPath, 'utf8').trim() : '';
  if (token === '') {
    token = newToken('h');
    writeFileAtomic(humanTokenPath, token + '\n', 0o600);
  }
  setMeta(db, 'human_token_hash', hashToken(token));
  return { account: { id, label: getMeta(db, 'account_label') ?? label }, created, humanTokenPath };
}

export const messagingEnabled = (db: Db): boolean => getMeta(db, 'agent_messaging') !== '0';

export const setMessaging = (db: Db, on: boolean): void => setMeta(db, 'agent_messaging', on ? '1' : '0');
