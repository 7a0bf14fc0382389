// Shared by the sending-side commands (send/ask/task/reply, messages, fleet, session, inbox).
export { resolveAgentAccess, withAgentAccess, principalEntryFor, type AgentAccess, type AgentFlags, type ThisSession } from './access.js';
export { hubFailureError, isTransient, type FailureContext } from './failures.js';
export { withRetries, SEND_RETRIES, type RetryOptions } from './retry.js';
export { readMessagingKnobs, type MessagingKnobs } from './knobs.js';
export { readMessageText } from './text-input.js';
export { snapshotMeaning, priorMeaning, isTerminal, formatTrack, excerpt } from './format.js';
export { addAgentFlags, type AgentFlagValues } from './flags.js';
