export {
  connectionSettings,
  resolveAgent,
  resolveBridge,
  stateEntryError,
  type AgentRequest,
  type ResolveFlags,
  type ResolveRequest,
  type ResolvedAgent,
  type ResolvedBridge,
} from './resolve.js';
export { resolveAgentSessionKey, type AgentSessionKey, type KeySource } from './session-key.js';
export { findHostProgram, type HostProgram, type ProcessInspector } from './host-program.js';
export { processInspector } from './inspector.js';
