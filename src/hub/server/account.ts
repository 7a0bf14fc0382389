import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../util/fs-durable.js';
import type { Account } from './core.js';
import { hashToken, newId, newToken } from './ids.js';
import { HUMAN_TOKEN_FILE } from './files.js';
import type { Sql, Store, Tx } from './sql.js';

export interface AccountBoot {
  account: Account;
  /** True when this start created the account (first start on this data dir or database). */
  created: boolean;
  /** Where this instance's copy of the human token is; null when it has none (another instance made the account). */
  humanTokenPath: string | null;
}

export const getMeta = async (q: Sql, key: string): Promise<string | null> =>
  (await q.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', key))?.value ?? null;

export async function setMeta(tx: Tx, key: string, value: string): Promise<void> {
  await tx.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value', key, value);
  // The human token's hash and the messaging switch are read with every credential.
  tx.wake('credentials', key);
}

/**
 * Make sure the store has an account and a human token. The token file (0600) is the
 * only place the token lives; the store keeps its hash. A token file that exists wins,
 * so an operator can rotate the token by replacing the file and restarting. An instance
 * joining a database whose account another instance made writes no token of its own:
 * the operator copies the first instance's file (docs/deploy.md).
 */
export async function bootAccount(store: Store, dataDir: string, label: string): Promise<AccountBoot> {
  const tokenFile = path.join(dataDir, HUMAN_TOKEN_FILE);
  const fileToken = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : '';
  return store.write(async (tx): Promise<AccountBoot> => {
    await tx.lockAgent('account');
    let id = await getMeta(tx, 'account_id');
    const created = id === null;
    if (id === null) {
      id = newId('acct');
      await setMeta(tx, 'account_id', id);
      await setMeta(tx, 'account_label', label);
      await setMeta(tx, 'agent_messaging', '1');
    }
    let token = fileToken;
    if (token === '' && (!store.shared || (await getMeta(tx, 'human_token_hash')) === null)) {
      token = newToken('h');
      writeFileAtomic(tokenFile, token + '\n', 0o600);
    }
    if (token !== '') await setMeta(tx, 'human_token_hash', hashToken(token));
    return { account: { id, label: (await getMeta(tx, 'account_label')) ?? label }, created, humanTokenPath: token === '' ? null : tokenFile };
  });
}

export const messagingEnabled = async (q: Sql): Promise<boolean> => (await getMeta(q, 'agent_messaging')) !== '0';

export const setMessaging = (tx: Tx, on: boolean): Promise<void> => setMeta(tx, 'agent_messaging', on ? '1' : '0');
