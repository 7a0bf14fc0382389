export { startPeerHub, type PeerHub, type PeerHubOptions, type RequestRecord } from './server.js';
export { defaultKnobs, type Fault, type PeerKnobs, type RequestInfo, type SseStyle, type JsonStyle, type IdStyle } from './knobs.js';
export { canonicalJson, mac, type Json } from './canonical.js';
export type { EntryRec, MessageRec, SessionRec } from './store.js';
