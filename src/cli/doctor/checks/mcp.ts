import { spawn } from 'node:child_process';
import type { CliIO } from '../../io.js';
import { check, type Check } from '../report.js';

/** What `oh-hai mcp` must list: the tool names are its interface. */
export const MCP_TOOLS = [
  'oh_hai_send',
  'oh_hai_ask',
  'oh_hai_task',
  'oh_hai_reply',
  'oh_hai_read',
  'oh_hai_messages',
  'oh_hai_fleet',
  'oh_hai_status',
] as const;

const FIX = 'run `oh-hai mcp` by hand to see its stderr; a missing @modelcontextprotocol/server or zod means a broken install: reinstall oh-hai';

type Spoken = { kind: 'listed'; tools: string[] } | { kind: 'failed'; why: string };

/**
 * Start `oh-hai mcp` as a harness would (same environment, stdio), initialise, list the
 * tools, close stdin and wait for the exit. Raw JSON-RPC lines: doctor does not load the
 * MCP SDK, whose client is not even installed with oh-hai.
 */
function speak(io: Pick<CliIO, 'env' | 'cwd' | 'self' | 'clock'>, timeoutMs: number): Promise<Spoken & { exit: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(io.self.execPath, [...io.self.args, 'mcp'], { env: io.env, cwd: io.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    let spoken: Spoken | null = null;
    const settle = (s: Spoken): void => {
      if (spoken !== null) return;
      spoken = s;
      child.stdin.end();
    };
    const cancel = io.clock.setTimer(timeoutMs, () => {
      settle({ kind: 'failed', why: `it did not list its tools within ${timeoutMs / 1000} s (OH_HAI_DOCTOR_TIMEOUT_SECONDS)` });
      child.kill('SIGKILL');
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      for (const line of out.split('\n').slice(0, -1)) {
        let m: { id?: unknown; result?: { tools?: { name?: unknown }[] }; error?: { message?: unknown } };
        try {
          m = JSON.parse(line) as typeof m;
        } catch {
          settle({ kind: 'failed', why: `it wrote something that is not JSON-RPC on stdout: ${JSON.stringify(line.slice(0, 80))}` });
          return;
        }
        if (m.id === 2 && m.result?.tools) settle({ kind: 'listed', tools: m.result.tools.map((t) => String(t.name)) });
        else if (m.error) settle({ kind: 'failed', why: `it answered with an error: ${String(m.error.message)}` });
      }
    });
    child.on('error', (e) => settle({ kind: 'failed', why: `it could not be started: ${e.message}` }));
    child.on('close', (code) => {
      cancel();
      settle({ kind: 'failed', why: `it exited (${code ?? 'killed'}) before listing its tools` });
      resolve({ ...spoken!, exit: code, stderr });
    });
    const send = (m: object): boolean => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'oh-hai-doctor', version: '0' } } });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/list' });
  });
}

/** The `mcp` check: whether `oh-hai mcp` starts, lists every tool, and exits when its client closes stdin. */
export async function mcpCheck(io: Pick<CliIO, 'env' | 'cwd' | 'self' | 'clock'>, timeoutMs: number): Promise<Check> {
  const start = io.clock.monotonic();
  const r = await speak(io, timeoutMs);
  const ms = Math.round(io.clock.monotonic() - start);
  const last = r.stderr
    .trim()
    .split('\n')
    .filter((l) => l.includes('FATAL'))
    .at(-1);
  if (r.kind === 'failed') return check('mcp', 'fail', `oh-hai mcp could not serve: ${r.why}${last ? ` — ${last}` : ''}`, { fix: FIX, measured: { ms } });
  const missing = MCP_TOOLS.filter((t) => !r.tools.includes(t));
  if (missing.length > 0)
    return check('mcp', 'fail', `oh-hai mcp started but does not list ${missing.join(', ')}`, { fix: FIX, measured: { ms, tools: r.tools } });
  if (r.exit !== 0)
    return check('mcp', 'warn', `oh-hai mcp listed its ${r.tools.length} tools but exited ${r.exit ?? '(killed)'} when its stdin closed, not 0`, {
      fix: FIX,
      measured: { ms },
    });
  return check('mcp', 'pass', `oh-hai mcp started, listed its ${r.tools.length} tools and exited when stdin closed (${ms} ms)`, {
    measured: { ms, tools: r.tools },
  });
}
