import type { Clock } from '../../util/clock.js';
import type { Bus } from './bus.js';
import type { GroupCommit } from './commit.js';
import type { HubConfig } from './config.js';
import type { FaultTable } from './faults.js';
import type { StreamRegistry } from './registry.js';
import type { Db } from './store.js';

/** The account a reference Hub serves (one per data dir). */
export interface Account {
  id: string;
  label: string;
}

/** Everything the Hub's services share; built once per server. */
export interface HubCore {
  db: Db;
  /** The write path: every request that writes runs its unit here and answers after the batch commits. */
  commits: GroupCommit;
  config: HubConfig;
  /** The Hub's clock (real + --clock-offset-ms). Every stored instant is on it. */
  clock: Clock;
  bus: Bus;
  streams: StreamRegistry;
  faults: FaultTable;
  account: Account;
  /** Agent ids by token hash, from MA2H_AGENT_TOKENS. */
  configAgents: Map<string, string>;
}
