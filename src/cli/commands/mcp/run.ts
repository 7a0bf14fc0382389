import type { CliIO } from '../../io.js';
import type { Outcome } from '../../../core/index.js';
import type { McpFlags } from '../../mcp/context.js';

/** `oh-hai mcp` flags as commander hands them over. */
export interface McpOptions extends McpFlags {
  allowFrom?: string[];
}

/**
 * The MCP SDK and zod are loaded here and nowhere else: no other command, and never the
 * bridge's warm path, pays for them (docs/performance.md).
 */
export async function run(opts: McpOptions, io: CliIO): Promise<Outcome> {
  const { serveMcp } = await import('../../mcp/server.js');
  return serveMcp({
    flags: opts,
    io,
    stdio: { stdin: io.stdin, stdout: io.stdout },
    signals: { on: (s, h) => void process.on(s, h), off: (s, h) => void process.off(s, h) },
  });
}
