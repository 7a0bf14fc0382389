import { readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { collect, ohHaiBin, repoRoot, type RunResult } from '../../helpers/cli.js';
import { hubCall } from '../../helpers/hub.js';
import { useParties, type Party } from '../messaging/world.js';

/**
 * The terminal work (docs/terminal.md) must not change a byte of what a pipe gets: a script
 * or an agent harness parses it. This runs one fixed story through pipes and compares the
 * transcript, with what differs per run (ids, pids, paths, instants, durations) replaced, to
 * piped.golden.txt. The golden file was first written by the release before the terminal
 * work (OH_HAI_GOLDEN_BIN=<that checkout>/bin/oh-hai OH_HAI_GOLDEN_WRITE=1); every later
 * change to it is a fixed defect, visible line by line in its history.
 */
const golden = path.join(path.dirname(fileURLToPath(import.meta.url)), 'piped.golden.txt');
const bin = process.env.OH_HAI_GOLDEN_BIN ?? ohHaiBin;

function run(p: Party, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  const child = spawn(process.execPath, [bin, ...args], { env: { ...p.env, ...env }, cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  return collect(child);
}

const world = useParties(['builder', 'reviewer']);

function normalise(text: string, parties: Party[], hubUrl: string): string {
  let t = text;
  for (const p of parties) t = t.split(p.temp.root).join('<root>').split(p.id).join('<agent>');
  return t
    .split(hubUrl)
    .join('<hub>')
    .replace(/\b(msg|ent|sess|agt|tsk|jti)_[A-Za-z0-9_-]+/g, '$1_<id>')
    .replace(/\bpid \d+/g, 'pid <n>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<instant>')
    .replace(/(renewed|lease) \d+[hms]( \d+[ms])?/g, '$1 <duration>')
    .replace(/retrying in \d+ ms/g, 'retrying in <n> ms')
    .replace(/\b[0-9a-f]{32}\b/g, '<key>')
    .replace(/v\d+\.\d+\.\d+/g, 'v<version>')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
    .split(` on ${hostname()}`)
    .join(' on <host>');
}

describe('piped output is what it was', () => {
  it('one story through pipes matches piped.golden.txt', async () => {
    const { builder, reviewer, hub } = world;
    const session = { MA2H_AGENT_SESSION_ID: 'reviewer' };
    const steps: [string, Party, string[], NodeJS.ProcessEnv?][] = [
      ['bridge --exit-codes', reviewer, ['bridge', '--exit-codes']],
      ['send to a bad address', builder, ['send', '--to', 'x', 'hi']],
      ['send with empty stdin', builder, ['send', '--to', reviewer.address]],
      ['session status before any bridge', reviewer, ['session', 'status'], session],
      ['a typo', builder, ['brige']],
      ['send', builder, ['send', '--to', `${reviewer.address}`, 'hello reviewer']],
      ['the bridge prints it', reviewer, ['bridge', '--allow-from', 'any-in-account', '--wait', '20'], session],
      ['the bridge again, nothing waiting', reviewer, ['bridge', '--wait', '0'], session],
      ['messages list', builder, ['messages', 'list']],
      ['session status', reviewer, ['session', 'status'], session],
      ['session close', reviewer, ['session', 'close'], session],
    ];
    let transcript = '';
    const record = async (title: string, who: Party, args: string[], env?: NodeJS.ProcessEnv) => {
      const r = await run(who, args, env);
      transcript += `## ${title}: exit ${r.code}\n-- stdout\n${r.stdout}-- stderr\n${r.stderr}`;
    };
    for (const [title, who, args, env] of steps) await record(title, who, args, env);
    // Two stops that warrant the epilogue's ⚠️: the stand-down relayed, then a dead credential (exit 3).
    await record('the bridge after session close', reviewer, ['bridge', '--wait', '30'], session);
    expect((await hubCall(hub, 'POST', `/v1/account/agents/${reviewer.id}/revoke`, { token: hub.humanToken })).status).toBe(200);
    await record('the bridge with a revoked credential', reviewer, ['bridge', '--wait', '30'], session);
    await hub.stop();
    await record('send with the Hub down', builder, ['send', '--to', reviewer.address, 'anyone there?']);
    const got = normalise(transcript, [builder, reviewer], hub.url);
    if (process.env.OH_HAI_GOLDEN_WRITE === '1') writeFileSync(golden, got);
    expect(got).toBe(readFileSync(golden, 'utf8'));
  }, 120_000);
});
