// The config surface: files, settings, credentials, the sender policy and policy writing.
// No Hub client here (no undici): the bridge's warm path loads this module and nothing else.
export { userConfigDir, userConfigPath, credentialsPath, identitiesPath, findProjectConfig } from './paths.js';
export { parseHubUrl, plainHttpWarning } from './hub-url.js';
export { type Transport, TRANSPORTS } from './transport.js';
export { type FileSettings } from './config-file.js';
export {
  type RetainPrinted,
  DEFAULT_RETAIN_PRINTED,
  RETAIN_PRINTED_ENV,
  formatRetainPrinted,
  isDefaultRetainPrinted,
  parseRetainPrinted,
} from './retention.js';
export { type LoadedConfig, type LoadedFile, loadConfigFiles } from './load.js';
export { type SettingsFlags, type ResolvedSettings, type BridgeSettings, type SettingSource, resolveSettings, requireHubUrl } from './settings.js';
export {
  type Policy,
  type PolicyEntry,
  type Admission,
  ANY_IN_ACCOUNT,
  isPolicyName,
  parsePolicy,
  policyItems,
  policyEquals,
  policyAdmits,
  describePolicy,
} from './policy.js';
export {
  type StoredAgent,
  type StoredHuman,
  type HubCredentials,
  type CredentialsFile,
  readCredentials,
  updateCredentials,
  credentialsForHub,
} from './credentials-file.js';
export {
  type AgentCredential,
  type HumanCredential,
  type CredentialSource,
  badTokenReason,
  parseAgentTokens,
  resolveAgentCredential,
  resolveHumanCredential,
} from './credentials.js';
export { identityKey, lookupCachedAgentId, rememberAgentId } from './identities.js';
export {
  type DirectoryRow,
  type DirectoryFetch,
  type PolicyWriteResult,
  type PolicyCheck,
  checkExistingPolicy,
  filterDirectory,
  writeAllowFromIfAbsent,
} from './policy-writer.js';
export { insertTableKey, tomlString } from './toml-edit.js';
export { type UserConfigText, editUserConfig, configuredHubUrl, writeHubUrlIfAbsent } from './user-config-edit.js';
export { readToml } from './toml-file.js';
