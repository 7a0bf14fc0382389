import { spawn, type ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ohHaiBin, repoRoot } from '../../helpers/cli.js';
import type { Party } from '../../helpers/env.js';
import { waitFor } from '../../helpers/wait.js';

/** `oh-hai mcp` as a harness starts it: a real child process, driven by the SDK's own client over stdio. */
export interface McpRun {
  client: Client;
  pid: number;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  /** A tool call's result, with the progress notifications it sent. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolCall>;
  close(): Promise<void>;
}

export interface ToolCall {
  isError: boolean;
  text: string;
  structured: Record<string, unknown>;
  progress: { progress: number; total?: number; message?: string }[];
}

export const MCP_ARGS = ['mcp', '--allow-from', 'any-in-account'];

/** The environment of a party in an agent session, as a harness that exports MA2H_AGENT_SESSION_ID per agent passes it. */
export const sessionEnv = (p: Party, session: string, extra: NodeJS.ProcessEnv = {}): Record<string, string> =>
  Object.fromEntries(Object.entries({ ...p.env, MA2H_AGENT_SESSION_ID: session, ...extra }).filter((e): e is [string, string] => e[1] !== undefined));

export async function startMcp(p: Party, session: string, opts: { env?: NodeJS.ProcessEnv; args?: string[] } = {}): Promise<McpRun> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ohHaiBin, ...(opts.args ?? MCP_ARGS)],
    env: sessionEnv(p, session, opts.env),
    cwd: repoRoot,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const client = new Client({ name: 'oh-hai-test', version: '0' });
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error('the MCP server has no pid');
  return {
    client,
    pid,
    stderr: () => stderr,
    async call(name, args, signal) {
      const progress: ToolCall['progress'] = [];
      const r = await client.callTool(
        { name, arguments: args },
        { onprogress: (p) => progress.push(p), timeout: 120_000, resetTimeoutOnProgress: true, signal },
      );
      const content = (r.content ?? []) as { type: string; text?: string }[];
      return {
        isError: r.isError === true,
        text: content.map((c) => c.text ?? '').join(''),
        structured: (r.structuredContent ?? {}) as Record<string, unknown>,
        progress,
      };
    },
    close: () => client.close(),
  };
}

/** `oh-hai mcp` spoken to line by line, without a client: for garbage on stdin, and for a server that cannot write its answer. */
export class RawMcp {
  readonly proc: ChildProcess;
  private out = '';
  private err = '';

  constructor(p: Party, session: string, opts: { readStdout?: boolean } = {}) {
    this.proc = spawn(process.execPath, [ohHaiBin, ...MCP_ARGS], { env: sessionEnv(p, session), cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.setEncoding('utf8').on('data', (d: string) => (this.err += d));
    if (opts.readStdout !== false) this.proc.stdout!.setEncoding('utf8').on('data', (d: string) => (this.out += d));
  }

  send(line: string): void {
    this.proc.stdin!.write(line + '\n');
  }

  request(id: number, method: string, params: Record<string, unknown> = {}): void {
    this.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  }

  /** Initialise as a 2025-era client would. */
  initialize(): void {
    this.request(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } });
    this.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  }

  /** The JSON-RPC messages on stdout so far. */
  messages(): Record<string, unknown>[] {
    return this.out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async answer(id: number | null, what: string): Promise<Record<string, unknown>> {
    return waitFor(() => this.messages().find((m) => m.id === id && ('result' in m || 'error' in m)) ?? null, { what: `${what}\nstderr: ${this.err}` });
  }

  stderr(): string {
    return this.err;
  }
}
