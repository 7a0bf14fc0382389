import { INVALID_REQUEST, PARSE_ERROR, parseJSONRPCMessage, type JSONRPCMessage, type RequestId, type Transport } from '@modelcontextprotocol/server';

/** What the transport reads from and writes to: the process's stdin and stdout, or a test's streams. */
export interface StdioPair {
  stdin: NodeJS.ReadableStream;
  stdout: { write(text: string, cb: (err?: Error | null) => void): boolean };
}

/** A line longer than this is answered with a parse error and dropped, not buffered without end. */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

/**
 * MCP's stdio binding: one JSON-RPC message per line on stdin and stdout. Ours rather than
 * the SDK's StdioServerTransport for two things a mailbox needs:
 *
 * - Garbage on stdin is answered. The SDK skips a line that is not JSON and only reports one
 *   that is not JSON-RPC; a client that wrote it then waits for nothing. Here a line that does
 *   not parse gets a JSON-RPC parse error (id null), one that is not a JSON-RPC message an
 *   invalid-request error, and the server keeps serving.
 * - `afterSent(id, hook)`: the hook runs once the response to request `id` has been handed to
 *   the OS. `oh_hai_read` advances the cursor there and nowhere earlier — print → flush →
 *   cursor, the bridge's order — so a server killed before its answer left loses nothing.
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private buffer = '';
  private closed = false;
  private readonly closedListeners: (() => void)[] = [];
  private readonly hooks = new Map<RequestId, () => void>();

  constructor(private readonly io: StdioPair) {}

  async start(): Promise<void> {
    this.io.stdin.setEncoding('utf8');
    this.io.stdin.on('data', this.onData);
    this.io.stdin.on('end', this.onEnd);
    this.io.stdin.on('error', this.onEnd);
  }

  private readonly onData = (chunk: string | Buffer): void => {
    this.buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    for (let nl = this.buffer.indexOf('\n'); nl !== -1; nl = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      if (line.trim() !== '') this.receive(line);
    }
    if (Buffer.byteLength(this.buffer, 'utf8') > MAX_LINE_BYTES) {
      this.buffer = '';
      this.reject(
        null,
        PARSE_ERROR,
        `Parse error: a line on stdin passed ${MAX_LINE_BYTES} bytes without a newline; it was dropped. Send one JSON-RPC message per line`,
      );
    }
  };

  private readonly onEnd = (): void => void this.close();

  private receive(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      this.reject(null, PARSE_ERROR, `Parse error: a line on stdin is not JSON (${(e as Error).message}); send one JSON-RPC 2.0 message per line`);
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      const id = idOf(value);
      this.reject(
        id,
        INVALID_REQUEST,
        'Invalid Request: the line is JSON but not a JSON-RPC 2.0 message (it needs "jsonrpc": "2.0" and a method, or a result or error with an id)',
      );
      return;
    }
    this.onmessage?.(message);
  }

  private reject(id: RequestId | null, code: number, message: string): void {
    // A JSON-RPC error answer to an unparseable request carries id null (JSON-RPC 2.0 §5); the SDK's types insist on an id.
    void this.write(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }) + '\n').catch((e: Error) => this.onerror?.(e));
  }

  /** Run `hook` once the response to request `id` has been written; returns a function that withdraws it. */
  afterSent(id: RequestId, hook: () => void): () => void {
    this.hooks.set(id, hook);
    return () => {
      if (this.hooks.get(id) === hook) this.hooks.delete(id);
    };
  }

  async send(message: JSONRPCMessage): Promise<void> {
    await this.write(JSON.stringify(message) + '\n');
    if ('id' in message && ('result' in message || 'error' in message) && message.id !== undefined) {
      const hook = this.hooks.get(message.id);
      if (hook === undefined) return;
      this.hooks.delete(message.id);
      // Only a result is what the tool returned; an error answer (a cancelled or failed call) returned nothing.
      if ('result' in message) hook();
    }
  }

  private write(text: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the MCP stdio transport is closed'));
    return new Promise((resolve, reject) => {
      this.io.stdout.write(text, (err) => (err ? reject(err) : resolve()));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.io.stdin.off('data', this.onData);
    this.io.stdin.off('end', this.onEnd);
    this.io.stdin.off('error', this.onEnd);
    this.io.stdin.pause();
    this.hooks.clear();
    this.onclose?.();
    for (const l of this.closedListeners) l();
  }

  /** Told once the transport closes (stdin ended). `onclose` belongs to the SDK, which owns the transport. */
  whenClosed(listener: () => void): void {
    this.closedListeners.push(listener);
  }
}

function idOf(value: unknown): RequestId | null {
  if (typeof value !== 'object' || value === null) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
