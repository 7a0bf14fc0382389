import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { readMessagingKnobs } from '../messaging/index.js';
import { SIGNAL_EXIT, toOutcome, type Outcome } from '../../core/index.js';
import type { CliIO } from '../io.js';
import { VERSION } from '../version.js';
import { NAME, type McpContext, type McpFlags } from './context.js';
import { serverInstructions } from './instructions.js';
import { registerReadTool, type ReadSeat } from './read.js';
import { LineTransport, type StdioPair } from './stdio.js';
import { registerMessagingTools } from './tools.js';

export interface ServeRequest {
  flags: McpFlags;
  io: CliIO;
  /** The JSON-RPC channel: the process's stdin and stdout. `io.stdout` is never written. */
  stdio: StdioPair;
  signals: { on(s: 'SIGINT' | 'SIGTERM', h: () => void): void; off(s: 'SIGINT' | 'SIGTERM', h: () => void): void };
}

/** The server the stdio entry pins for the connection: every tool registered on one McpServer. */
export function buildServer(ctx: McpContext, seat: ReadSeat): McpServer {
  const server = new McpServer({ name: 'oh-hai', version: VERSION }, { instructions: serverInstructions(), capabilities: { tools: {} } });
  registerMessagingTools(server, ctx);
  registerReadTool(server, ctx, seat);
  return server;
}

/**
 * `oh-hai mcp`: serve until the client closes stdin (exit 0) or a SIGINT/SIGTERM arrives
 * (130/143, as the bridge). A SIGTERM that a displacing `oh-hai bridge` sent to end an
 * `oh_hai_read` ends that read only: the seat hands it over (read.ts).
 */
export async function serveMcp(req: ServeRequest): Promise<Outcome> {
  const knobs = readMessagingKnobs(req.io.env);
  if (!knobs.ok) return toOutcome(knobs.error);
  const say = (line: string): void => void req.io.stderr.write(`${NAME}: ${line}\n`);
  // Anything a tool would print goes to stderr: stdout carries JSON-RPC and nothing else.
  const io: CliIO = { ...req.io, stdout: req.io.stderr };
  const transport = new LineTransport(req.stdio);
  const ctx: McpContext = { flags: req.flags, io, knobs: knobs.value, transport, say };
  const seat: ReadSeat = { current: null };

  return new Promise<Outcome>((resolve) => {
    let handle: { close(): Promise<void> } | null = null;
    let finished = false;
    const finish = (o: Outcome): void => {
      if (finished) return;
      finished = true;
      for (const [s, h] of handlers) req.signals.off(s, h);
      if (handle === null) resolve(o);
      else void handle.close().finally(() => resolve(o));
    };
    const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
      if (signal === 'SIGTERM' && seat.current?.displaced()) return;
      say(`stopped by ${signal}; a read in flight returned nothing, so nothing is lost — the next read or bridge run prints it`);
      finish({ exit: SIGNAL_EXIT[signal], style: 'silent' });
    };
    const handlers = (['SIGINT', 'SIGTERM'] as const).map((s) => [s, () => onSignal(s)] as const);
    for (const [s, h] of handlers) req.signals.on(s, h);
    transport.whenClosed(() => finish({ exit: 0, style: 'silent' }));
    handle = serveStdio(() => buildServer(ctx, seat), { transport, onerror: (e) => say(`protocol: ${e.message}`) });
    say(`serving oh_hai_* tools on stdio (protocol on stdout, diagnostics here); each call resolves this agent session as oh-hai bridge does`);
  });
}
