// Shared by the sending-side commands (send/ask/task/reply, messages, fleet, session, inbox) and the MCP server.
export { resolveAgentAccess, withAgentAccess, principalEntryFor, type AgentAccess, type AgentFlags, type ThisSession } from './access.js';
export { hubFailureError, isTransient, type FailureContext } from './failures.js';
export { withRetries, SEND_RETRIES, type RetryOptions } from './retry.js';
export { readMessagingKnobs, type MessagingKnobs } from './access.js';
export { readMessageText, checkTextSize } from './text-input.js';
export { snapshotMeaning, priorMeaning, isTerminal, formatTrack, excerpt } from './format.js';
export { addAgentFlags, type AgentFlagValues } from './flags.js';
export { withThisSession, type Say } from './attach.js';
export { queuedLines, waitResultLine, type ReplyRoute } from './send-lines.js';
export { waitForResponse, type WaitEnd, type WaitOptions } from './wait.js';
export { checkDestination, failureContext, sendMessage, type Queued } from './send.js';
export { answerMessage, type Answered } from './respond.js';
export { annotate, fleetView, type AnnotatedRow, type FleetView } from './fleet-view.js';
export { annotateEntry, scanLocalState, type LocalAnnotation, type LocalScan } from './local-state.js';
export { sessionStatus, statusEpilogue, statusLines, type SessionStatus, type StatusView } from './status-view.js';
export { listLine, listText, showText, type Direction } from './message-lines.js';
export { formatFleet } from './fleet-lines.js';
