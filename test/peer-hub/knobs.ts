/**
 * Everything a conformance test can turn on the peer Hub. The object is live: a test may
 * change a field while the Hub runs (a fault, a signature age, messaging off) and the next
 * request sees it. Defaults deliberately differ from a "typical" Hub wherever MA2H.md
 * leaves room, because a client must accept anything the text allows.
 */

/** How the SSE bytes are framed. Every variant here is valid SSE (MA2H §5 "Parse with a real SSE parser"). */
export interface SseStyle {
  lineEnd: '\n' | '\r\n' | '\r';
  /**
   * Spread each event's JSON over several `data:` lines (JSON allows whitespace between
   * tokens), with an empty `data:` line among them and the `event:` field after them.
   */
  multiLineData: boolean;
  /** Comment lines inside and between events, besides the keep-alive. */
  comments: boolean;
  /** Write each event in small pieces, cutting through multi-byte characters. */
  splitChunks: boolean;
  /** A UTF-8 byte-order mark before the first byte (the SSE spec strips one). */
  bom: boolean;
  /** `id:` and `retry:` fields, which an MA2H client has no use for. */
  idAndRetry: boolean;
}

export interface JsonStyle {
  /** Emit object keys in reverse order at every depth. */
  reverseKeys: boolean;
  /** Unknown fields in every response object (never inside an entry, MA2H §0/§7). */
  extraFields: boolean;
}

/**
 * `peer`: ids of our own shape within the §0 grammar (no reference prefixes).
 * `exotic`: ids that need percent-encoding in a path or query (`/`, `?`, `%`, `&`, non-ASCII).
 */
export type IdStyle = 'peer' | 'exotic';

/** Which request a fault hook is looking at. */
export interface RequestInfo {
  method: string;
  route: string;
  path: string;
  query: URLSearchParams;
}

/**
 * A fault. `status`: answered instead of the real answer. `drop: 'before'`: the connection is
 * cut without handling the request; `drop: 'after'`: the request takes effect, then the
 * connection is cut before the answer (a lost response).
 */
export type Fault = { status: number; code?: string; retryAfterSeconds?: number } | { drop: 'before' | 'after' };

export interface PeerKnobs {
  protocol: string;
  version: string;
  /** null: the field is absent from the capability document. */
  sessionParam: boolean | null;
  /** The advertised `inbound.stream_url`; null: not advertised (long-poll only) and not served. */
  streamPath: string | null;
  maxWaitSeconds: number;
  streamMaxHoldSeconds: number;
  keepaliveSeconds: number;
  /** null: the capability document has no `replay_window_seconds` (clients use 300). */
  replayWindowSeconds: number | null;
  leaseDefaultSeconds: number;
  leaseMinSeconds: number;
  leaseMaxSeconds: number;
  maxLivePerAgent: number;
  agentDirectory: boolean;
  presenceSeconds: number;
  holderSeenSeconds: number;
  messageTtlSeconds: number;
  signingKey: string;
  /** Added to the real clock for every instant the Hub sends (MA2H §0: the Hub's clock). */
  clockSkewMs: number;
  /** Deliveries are signed with `t` this many seconds before the Hub's now. */
  signatureAgeSeconds: number;
  ids: IdStyle;
  /** Session ids start with this (the CLI pins any Hub session id; this prefix is only what this Hub mints). */
  sessionIdPrefix: string;
  sse: SseStyle;
  json: JsonStyle;
  /**
   * Deliberate violations, for tests that the client refuses them. `reshapeEntry` changes an
   * entry before it is signed (a validly signed but invalid entry); `tamperSignature` changes
   * the signature text after signing (`previous` is the last signature this entry went out with).
   */
  reshapeEntry: ((entry: { [key: string]: string }) => { [key: string]: string }) | null;
  tamperSignature: ((signature: string, previous: string | null) => string) | null;
  /** Consulted before every routed request; a non-null answer replaces the real one. */
  fault: ((req: RequestInfo) => Fault | null) | null;
}

export const defaultKnobs = (signingKey: string): PeerKnobs => ({
  protocol: 'MA2H',
  version: '0.5.13',
  sessionParam: true,
  streamPath: '/v1/inbox/stream',
  maxWaitSeconds: 2,
  streamMaxHoldSeconds: 0.7,
  keepaliveSeconds: 0.2,
  replayWindowSeconds: 90,
  leaseDefaultSeconds: 600,
  leaseMinSeconds: 1,
  leaseMaxSeconds: 1800,
  maxLivePerAgent: 16,
  agentDirectory: true,
  presenceSeconds: 90,
  holderSeenSeconds: 60,
  messageTtlSeconds: 7 * 24 * 3600,
  signingKey,
  clockSkewMs: 0,
  signatureAgeSeconds: 0,
  ids: 'peer',
  sessionIdPrefix: 'S~',
  sse: { lineEnd: '\r\n', multiLineData: true, comments: true, splitChunks: true, bom: true, idAndRetry: true },
  json: { reverseKeys: true, extraFields: true },
  reshapeEntry: null,
  tamperSignature: null,
  fault: null,
});
