import type { CallToolResult } from '@modelcontextprotocol/server';
import { BRIDGE_EXIT_TABLE, EXIT, type CodedError, type ExitRow } from '../../core/index.js';

/**
 * What a tool hands back. A success carries the lines the CLI would print (for the model to
 * read) and the same facts as structured content (for a program). A refusal is a tool error
 * — `isError`, never a JSON-RPC error, so the model sees it — carrying the exit code the CLI
 * would have exited with, its name, and the exit table's meaning and what to do.
 */

/** The name of each exit code, as `EXIT` spells it (`auth`, `verification`, …). */
const EXIT_NAMES = new Map<number, string>(Object.entries(EXIT).map(([name, code]) => [code, name]));

export interface ToolErrorFacts {
  exit: number;
  exit_name: string;
  /** snake_case reason, e.g. `unauthorized`, `reader_held`, `verification_failed`. */
  code: string;
  message: string;
  /** The exit table's row for this code; null for 1 (a bug, never a documented condition). */
  meaning: string | null;
  what_to_do: string | null;
}

/** `rows`: the table of the command the tool stands for (the bridge's, or the sending commands'). */
export function errorFacts(e: CodedError, rows: readonly ExitRow[] = BRIDGE_EXIT_TABLE): ToolErrorFacts {
  const row = rows.find((r) => r.code === e.exit);
  return {
    exit: e.exit,
    exit_name: EXIT_NAMES.get(e.exit) ?? 'unknown',
    code: e.code,
    message: e.message,
    meaning: row?.meaning ?? (e.exit === EXIT.internal ? 'a bug in oh-hai' : null),
    what_to_do: row?.todo ?? (e.exit === EXIT.internal ? "report it with the server's stderr; the call may be retried" : null),
  };
}

/** The line a model reads: the same words as the CLI's stop line, then the exit table's advice. */
export function errorText(f: ToolErrorFacts): string {
  const advice = f.meaning !== null ? `\nexit ${f.exit} (${f.exit_name}): ${f.meaning} — what to do: ${f.what_to_do}` : '';
  return `FATAL (exit ${f.exit}, ${f.code}) — ${f.message}${advice}`;
}

export function toolError(
  e: CodedError,
  extra: { text?: string; structured?: Record<string, unknown> } = {},
  rows: readonly ExitRow[] = BRIDGE_EXIT_TABLE,
): CallToolResult {
  const facts = errorFacts(e, rows);
  const text = (extra.text ?? '') + errorText(facts);
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { ...extra.structured, error: facts } };
}

export function toolResult(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}
