// The Hub client: every MA2H endpoint over undici, and the SSE stream. Importing this
// loads undici; the bridge's warm path (the reader) never does.
export { HubClient, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_AGENT_DIRECTORY, type HubClientOptions } from './hub-client.js';
export { CHECK_HUB_URL, noSuchEndpoint, type HubFailure, type HubResult } from './result.js';
export { DEFAULT_STREAM_PATH, streamPath, type StreamEnd, type StreamOptions } from './stream.js';
export { streamTimeouts, type StreamTimeouts } from './timeouts.js';
export { SseDecoder, maxSseEventChars, type SseItem } from './sse-decoder.js';
export { maxResponseBytes } from './http.js';
