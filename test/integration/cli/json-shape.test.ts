import { afterAll, describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { processIO } from '../../../src/cli/io.js';
import { JSON_OUTPUTS, JSON_STREAMS } from '../../../src/cli/json/outputs.js';
import { checkShape } from '../../../src/cli/json/shape.js';
import { buildProgram } from '../../../src/cli/main.js';
import { runOhHai, type RunResult } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hubCall } from '../../helpers/hub.js';
import { useHub } from '../../helpers/world.js';

/**
 * docs/json.md: every `--json` prints ONE JSON document, documented field by field
 * (src/cli/json/outputs.ts, rendered into the man pages). Each command of the registry is
 * run here against a real Hub and what it printed is checked against the same text: a
 * field added, renamed or retyped without the documentation fails here.
 */
const world = useHub();
const temps: TempEnv[] = [];
afterAll(() => temps.forEach((t) => t.cleanup()));

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const t = tempEnv({ MA2H_HUB_URL: world.hub.url, OH_HAI_UNATTENDED_MAX_SECONDS: '60', ...extra });
  temps.push(t);
  return t.env;
}

const checked = new Set<string>();

/** Run `oh-hai <args> --json`, parse stdout as ONE document, and check it against the registry entry `command`. */
async function document(command: string, args: string[], e: NodeJS.ProcessEnv, opts: { input?: string; exit?: number } = {}): Promise<unknown> {
  const r: RunResult = await runOhHai([...args, '--json'], { env: e, input: opts.input });
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(opts.exit ?? 0);
  expect(r.stdout.endsWith('\n') && r.stdout.indexOf('\n') === r.stdout.length - 1, `${command}: one line, one document:\n${r.stdout}`).toBe(true);
  const doc: unknown = JSON.parse(r.stdout);
  const spec = JSON_OUTPUTS.find((o) => o.command === command);
  expect(spec, `${command} has no entry in src/cli/json/outputs.ts`).toBeDefined();
  expect(checkShape(doc, spec!.shape), `${command} --json against its documented shape`).toEqual([]);
  checked.add(command);
  return doc;
}

/** Every command path whose options include --json (hidden commands too: they still print). */
function jsonCommands(program: Command, prefix = ''): string[] {
  return program.commands.flatMap((c) => {
    const path = prefix === '' ? c.name() : `${prefix} ${c.name()}`;
    const own = c.options.some((o) => o.long === '--json') ? [path] : [];
    return [...own, ...jsonCommands(c, path)];
  });
}

describe('--json: one document per command, as documented', () => {
  it('every command that takes --json is in the registry (a document) or is a stream', async () => {
    const program = await buildProgram(processIO(), () => undefined);
    const documented = new Set([...JSON_OUTPUTS.map((o) => o.command.replace(/ --\S+/g, '')), ...JSON_STREAMS.map((s) => s.command)]);
    expect(jsonCommands(program).filter((c) => !documented.has(c))).toEqual([]);
  });

  it('prints what the registry documents, for every command in it', async () => {
    const hub = world.hub;
    const admin = env();
    const adminArgs = ['--data', hub.dataDir];

    // Accounts and agents.
    const minted = (await document('hub agent add', ['hub', 'agent', 'add', 'carol', ...adminArgs], admin)) as { agent: { id: string }; token: string };
    await document('hub agent ls', ['hub', 'agent', 'ls', ...adminArgs], admin);
    await document('login', ['login', '--token-stdin'], env(), { input: minted.token });
    const bob = await hub.mintAgent('bob');
    await document('setup', ['setup', '--hub', hub.url, '--token-stdin'], env(), { input: bob.token });

    // Messaging, as alice to bob (by label) and bob answering.
    const alice = await hub.mintAgent('alice');
    const aliceEnv = env({ OH_HAI_TOKEN: alice.token, OH_HAI_ASK_POLL_MS: '100' });
    const bobEnv = env({ OH_HAI_TOKEN: bob.token, MA2H_AGENT_SESSION_ID: 'bob-1' });
    await document('send', ['send', '--to', 'bob', 'hello'], aliceEnv);
    await document('task', ['task', '--to', 'bob', 'do a thing'], aliceEnv);
    const ask = (await document('ask', ['ask', '--to', 'bob', 'may I?'], aliceEnv)) as { id: string };
    const read = await runOhHai(['bridge', '--allow-from', 'any-in-account', '--wait', '0.5'], { env: bobEnv });
    expect(read.code, read.stderr).toBe(0);
    await document('reply', ['reply', ask.id, 'yes'], bobEnv);
    await document('messages list', ['messages', 'list'], aliceEnv);
    await document('messages show', ['messages', 'show', ask.id], aliceEnv);
    await document('fleet ls', ['fleet', 'ls'], aliceEnv);
    await document('fleet ls --sessions', ['fleet', 'ls', '--sessions'], aliceEnv);
    await document('session status', ['session', 'status'], bobEnv);
    const closed = (await document('session close', ['session', 'close'], bobEnv)) as { stood_down: { hub_state: string } | null };
    expect(closed.stood_down?.hub_state).toBe('closed');

    // The human's side.
    await document('hub directive', ['hub', 'directive', '--to', 'alice', 'do it', ...adminArgs], admin);
    const s = (await hubCall(hub, 'POST', '/v1/sessions', { token: alice.token, body: { client_key: 'ck', name: 'run-1' } })).body.session as { id: string };
    await document('hub session close', ['hub', 'session', 'close', s.id, ...adminArgs], admin);
    await document('hub lift', ['hub', 'lift', '--agent', alice.id, ...adminArgs], admin);
    await document('hub messaging', ['hub', 'messaging', 'on', ...adminArgs], admin);
    await document('hub agent revoke', ['hub', 'agent', 'revoke', minted.agent.id, ...adminArgs], admin);

    // Health: the envelope, whatever the verdict (no MCP SDK check matters here).
    const doctor = await runOhHai(['doctor', '--json'], { env: aliceEnv });
    expect(checkShape(JSON.parse(doctor.stdout), JSON_OUTPUTS.find((o) => o.command === 'doctor')!.shape)).toEqual([]);
    checked.add('doctor');
    const status = await runOhHai(['bridge', 'status', '--json'], { env: aliceEnv });
    expect(checkShape(JSON.parse(status.stdout), JSON_OUTPUTS.find((o) => o.command === 'bridge status')!.shape)).toEqual([]);
    checked.add('bridge status');

    expect([...checked].sort()).toEqual(JSON_OUTPUTS.map((o) => o.command).sort());
    // About thirty CLI runs in sequence: on a loaded 2-core machine that outlasts the default minute.
  }, 240_000);
});
