// The MA2H 0.5 contract in code: shapes, validators, signature syntax, canonical JSON
// and MAC, capability rules, address grammar. No network code: the bridge's warm path
// and the Hub server import this without loading the client.
export type * from './types.js';
export { MAX_PAGE_BYTES, PAGE_ENVELOPE_BYTES, maximalDelivery, maxDeliveryBytes, deliveryWrapperBytes, maxPageAcceptBytes } from './limits.js';
export { MAX_TEXT_BYTES, ENTRY_KINDS, MESSAGE_INTENTS, RECEIPT_STATUSES, PRIOR_STATES, validateEntry, splitDelivery, checkText } from './entry.js';
export { SIGNATURE_ALG, parseSignature, formatSignature, canonicalJson, macHex, signEntry, signCanonical, verifyMac } from './signature.js';
export {
  MIN_VERSION,
  DEFAULT_REPLAY_WINDOW_SECONDS,
  parseVersion,
  compareVersions,
  checkCapability,
  chooseTransport,
  replayWindowSeconds,
  agentDirectoryPath,
  type Semver,
  type TransportChoice,
} from './capability.js';
export {
  MAX_ID_BYTES,
  MAX_AGENT_ID_BYTES,
  validateId,
  validateAgentId,
  validateSessionName,
  isSessionId,
  parseAddress,
  formatAddress,
  isPrincipalSender,
  validateSender,
  type Address,
} from './ids.js';
export { CONSUMER_HEADER, parseConsumerHeader, formatConsumerHeader, sanitizeHeaderValue } from './consumer-header.js';
export {
  SESSION_STATES,
  MESSAGE_STATES,
  REACHABILITY,
  CLOSED_REASONS,
  parseSession,
  parseSessionLease,
  parseMessage,
  parseSentMessage,
  parseMessageList,
  parseFleet,
  parseAgents,
  parseMintedAgent,
  parseWhoami,
  parseAckResult,
  parseDrain,
  parseAccountState,
  parseLiftResult,
  parseOperatorStops,
  parseOpenEvent,
  parseEntriesEvent,
  parseClosedEvent,
  parseReconnectEvent,
  parseHubError,
} from './responses.js';
export {
  MAX_ACK_IDS,
  MAX_LABEL_BYTES,
  validateCreateSession,
  validateSend,
  validateRespond,
  validateAck,
  validateDirective,
  validateLift,
  validateAccountPatch,
  validateMintAgent,
  type RequestCheck,
} from './requests.js';
export { HUB_ERROR_STATUS, sessionEndedCode, type HubErrorCode } from './errors.js';
export { isIsoInstant, utf8Bytes } from '../../util/shape.js';
export { resolveName, describeAgent, isName, labelFor, NAME_FORMS, type Resolved } from './names.js';
