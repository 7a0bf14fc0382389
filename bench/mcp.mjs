// Tool-call latency of `oh-hai mcp` against the CLI doing the same work, in the same run, on
// a reference Hub on loopback:
//   send: oh_hai_send (one tools/call to a running server) vs `oh-hai send` (a process per send);
//   read: oh_hai_read with one record waiting vs `oh-hai bridge --wait 0` with one record waiting
//         (both adopt the running connection, print/return the record, advance the cursor).
// Samples alternate between the two so load drifts hit both alike. Prints p50/p99 and the
// ratio CLI / MCP. Needs `npm run build` (and the dev dependency @modelcontextprotocol/client).
// Never run by CI. Findings: docs/performance.md "oh-hai mcp".
//   node bench/mcp.mjs [--samples 40]
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { sessionStateDir, stateKey } from '../dist/spool/index.js';
import { agentEnv, bin, percentile, startHub, timed, until } from './bridge-world.mjs';

const i = process.argv.indexOf('--samples');
const SAMPLES = i === -1 ? 40 : Number(process.argv[i + 1]);

const hub = await startHub();
const alice = await hub.mint('mcp-bench-sender');
const bob = await hub.mint('mcp-bench-reader');
const a = agentEnv(hub.url, alice, 'bench-sender');
const b = agentEnv(hub.url, bob, 'bench-reader');
const bobDir = sessionStateDir(b.env.XDG_STATE_HOME, stateKey(hub.url, bob.id, 'bench-reader'));
const spool = () => {
  try {
    return readFileSync(path.join(bobDir, 'bridge.ndjson'), 'utf8');
  } catch {
    return '';
  }
};
const spooled = () =>
  spool()
    .split('\n')
    .filter((l) => l !== '').length;
const hasSpooled = (...texts) => texts.every((t) => spool().includes(JSON.stringify(t)));

// Bob's connection runs (started by a bridge run) and his session is registered.
await timed(process.execPath, [bin, 'bridge', '--wait', '0', '--allow-from', 'any-in-account'], b.env);
const session = await until(() => {
  try {
    return JSON.parse(readFileSync(path.join(bobDir, 'session.json'), 'utf8'));
  } catch {
    return null;
  }
}, "bob's session record");

async function server(env) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp'], env, stderr: 'ignore' });
  const client = new Client({ name: 'oh-hai-bench', version: '0' });
  await client.connect(transport);
  return client;
}
const aliceMcp = await server(a.env);
const bobMcp = await server(b.env);

async function call(client, name, args) {
  const t0 = performance.now();
  const r = await client.callTool({ name, arguments: args });
  const ms = performance.now() - t0;
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  return { ms, r };
}

/** One record waiting in bob's spool, put there through the Hub. */
let sent = 0;
async function oneWaiting() {
  const before = spooled();
  await hub.call(alice.token, 'POST', '/v1/messages', { to: session.address, intent: 'notify', text: `read sample ${sent++}` });
  await until(() => spooled() > before, 'the record spooled');
}

const times = { mcpSend: [], cliSend: [], mcpRead: [], cliRead: [] };
// One warm-up of each, not counted: the first server call loads the tools, the first CLI run fills the code cache.
await call(aliceMcp, 'oh_hai_send', { to: session.address, text: 'warm-up' });
await timed(process.execPath, [bin, 'send', '--to', session.address, 'warm-up'], a.env);
await until(() => spool().split('warm-up').length === 3, 'the warm-ups spooled');
await call(bobMcp, 'oh_hai_read', {});

for (let n = 0; n < SAMPLES; n++) {
  const cli = await timed(process.execPath, [bin, 'send', '--to', session.address, `cli send ${n}`], a.env);
  if (cli.code !== 0) throw new Error(`oh-hai send exited ${cli.code}`);
  times.cliSend.push(cli.ms);
  times.mcpSend.push((await call(aliceMcp, 'oh_hai_send', { to: session.address, text: `mcp send ${n}` })).ms);

  // Drain what the sends queued so each read below finds exactly one record.
  await until(() => hasSpooled(`cli send ${n}`, `mcp send ${n}`), 'the sends spooled');
  await call(bobMcp, 'oh_hai_read', {});

  await oneWaiting();
  let printed = '';
  const read = await timed(process.execPath, [bin, 'bridge', '--wait', '0'], b.env, (d) => (printed += d));
  if (read.code !== 0 || !printed.includes('read sample')) throw new Error(`oh-hai bridge exited ${read.code} printing ${JSON.stringify(printed)}`);
  times.cliRead.push(read.ms);
  await oneWaiting();
  const m = await call(bobMcp, 'oh_hai_read', {});
  if (m.r.structuredContent.records.length !== 1) throw new Error(`oh_hai_read returned ${m.r.structuredContent.records.length} records`);
  times.mcpRead.push(m.ms);
}

const fmt = (xs) => `p50 ${percentile(xs, 50).toFixed(1)} ms · p99 ${percentile(xs, 99).toFixed(1)} ms`;
const ratio = (cli, mcp) => (percentile(cli, 50) / percentile(mcp, 50)).toFixed(1);
console.log(`oh-hai mcp tool-call latency, ${SAMPLES} samples each (Node ${process.versions.node}, ${hub.url})`);
console.log(`send  oh_hai_send          ${fmt(times.mcpSend)}`);
console.log(`send  oh-hai send          ${fmt(times.cliSend)}   (CLI / MCP at p50: ${ratio(times.cliSend, times.mcpSend)}×)`);
console.log(`read  oh_hai_read          ${fmt(times.mcpRead)}`);
console.log(`read  oh-hai bridge --wait 0 ${fmt(times.cliRead)}   (CLI / MCP at p50: ${ratio(times.cliRead, times.mcpRead)}×)`);

await aliceMcp.close();
await bobMcp.close();
// Stop bob's connection: it is recorded in consumer.json.
try {
  process.kill(JSON.parse(readFileSync(path.join(bobDir, 'consumer.json'), 'utf8')).pid, 'SIGTERM');
} catch {
  // already gone
}
await hub.stop();
rmSync(a.tmp, { recursive: true, force: true });
rmSync(b.tmp, { recursive: true, force: true });
