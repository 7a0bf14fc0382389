// The reference Hub (MA2H 0.5 server side). Opens SQLite (node:sqlite or better-sqlite3): import it only from
// `oh-hai hub …` and `oh-hai demo`, never from the bridge's path.
export { createHubServer, type HubServer, type HubServerOptions, type HubRecord } from './server.js';
export { formatUrl, interfaceUrls, wildcardFamily } from './listen-url.js';
export { HUB_DEFAULTS, defaultHubConfig, checkConfig, clampLease, holdMs, effectiveMaxWaitSeconds, type HubConfig, type ConfigToken } from './config.js';
export { HUMAN_TOKEN_FILE, HUB_RECORD_FILE, STORE_FILE } from './files.js';
export { parseFaultRules, FAULT_CLASSES, FAULT_ACTIONS, TAMPER_MODES, type FaultRule, type FaultClass, type TamperMode } from './faults.js';
export type { ExtraRoutes } from './router.js';
export type { HubCore } from './core.js';
export { parseConfigTokens } from './config-tokens.js';
export { STORE_IN_USE } from './store.js';
export { DATABASE_REFUSED } from './database-errors.js';
export { SQLITE_DRIVER_ENV, SQLITE_UNAVAILABLE, parseSqliteDriverChoice, type SqliteDriverChoice } from './sqlite-driver.js';
