import type { CallToolResult } from '@modelcontextprotocol/server';
import type { CliIO } from '../io.js';
import { resolveAgentAccess, type AgentAccess, type MessagingKnobs } from '../messaging/index.js';
import { EXIT } from '../../core/index.js';
import type { ResolveFlags } from '../resolve/index.js';
import type { LineTransport } from './stdio.js';
import { toolError } from './results.js';

/** `oh-hai mcp`'s flags: the bridge's, with the same meaning, so the server and a bridge share one agent session. */
export interface McpFlags extends ResolveFlags {
  allowFrom?: string[];
}

/** What every tool works with: resolved again on each call, so a fixed credential or config takes effect without a restart. */
export interface McpContext {
  flags: McpFlags;
  /** The CLI's IO with stdout pointed at stderr: stdout carries JSON-RPC and nothing else. */
  io: CliIO;
  knobs: MessagingKnobs;
  transport: LineTransport;
  /** A diagnostic line on stderr, `oh-hai mcp: …`. */
  say(line: string): void;
}

export const NAME = 'oh-hai mcp';

/**
 * Run a tool body as this agent, as the sending-side commands do (`withAgentAccess`): resolve,
 * say the warnings on stderr, release the Hub client after. A failed resolution is a tool
 * error with its exit code; an exception is a bug, reported without a stack trace (the
 * stack goes to stderr).
 */
export async function asAgent(ctx: McpContext, tool: string, body: (a: AgentAccess) => Promise<CallToolResult>): Promise<CallToolResult> {
  return guarded(ctx, tool, async () => {
    const access = await resolveAgentAccess(ctx.flags, ctx.io);
    if (!access.ok) return toolError(access.error);
    const a = access.value;
    try {
      for (const w of a.warnings) ctx.say(w);
      return await body(a);
    } finally {
      await a.client.close();
    }
  });
}

export async function guarded(ctx: McpContext, tool: string, body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (e) {
    ctx.say(`${tool}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    const message = `this is a bug in oh-hai: ${e instanceof Error ? e.message : String(e)}. The server's stderr has the details`;
    return toolError({ code: 'internal', exit: EXIT.internal, message });
  }
}
