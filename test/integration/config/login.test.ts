import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collect, ohHaiBin, runOhHai, startOhHai } from '../../helpers/cli.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

const configDir = (t: TempEnv) => path.join(t.env.XDG_CONFIG_HOME!, 'oh-hai');
const credentialsText = (t: TempEnv) => readFileSync(path.join(configDir(t), 'credentials.json'), 'utf8');
const writeUserConfig = (t: TempEnv, text: string) => {
  mkdirSync(configDir(t), { recursive: true });
  writeFileSync(path.join(configDir(t), 'config.toml'), text);
};

/** The pid and every descendant, from /proc/<pid>/stat (ppid is the 4th field, after the parenthesised name). */
function processTree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited while we looked
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parent) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

const cmdlines = (root: number): string[] =>
  processTree(root).flatMap((pid) => {
    try {
      return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')];
    } catch {
      return [];
    }
  });

/** Run oh-hai on a real pseudo-terminal (util-linux `script`), so it prompts; `script` itself echoes nothing. */
function onTerminal(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  const command = [process.execPath, ohHaiBin, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-q', '-E', 'never', '-e', '-c', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  return { child, output: () => out };
}

const exited = (child: ChildProcess): Promise<number | null> =>
  child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));

let t: TempEnv;
afterEach(() => t?.cleanup());

describe('oh-hai login and logout', () => {
  let hub: TestHub;
  let builder: { id: string; token: string };
  let reviewer: { id: string; token: string };

  beforeAll(async () => {
    hub = await startHub();
    builder = await hub.mintAgent('builder');
    reviewer = await hub.mintAgent('reviewer');
  });
  afterAll(() => hub.dispose());

  it('on a terminal, prompts with echo off: the typed token never appears, and is stored', async () => {
    t = tempEnv();
    const { child, output } = onTerminal(['login', '--hub', hub.url], t.env);
    await waitFor(() => output().includes('Paste the agent token (input is hidden): '), { what: 'the prompt' });
    for (const line of cmdlines(child.pid!)) expect(line).not.toContain(builder.token);
    child.stdin!.write(`${builder.token}\r`);
    while (child.exitCode === null) {
      for (const line of cmdlines(child.pid!)) expect(line).not.toContain(builder.token);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await exited(child), output()).toBe(0);
    expect(output()).toContain(`logged in to ${hub.url} as agent ${builder.id}`);
    expect(output()).not.toContain(builder.token);
    expect(credentialsText(t)).toContain(builder.token);
    child.stdin!.end();
  });

  it('setup on a terminal asks for the Hub URL, then the token (hidden), then writes the policy', async () => {
    t = tempEnv();
    const { child, output } = onTerminal(['setup'], t.env);
    await waitFor(() => output().includes('Hub URL (e.g. https://hub.example.com): '), { what: 'the Hub URL prompt' });
    child.stdin!.write(`${hub.url}\r`);
    await waitFor(() => output().includes('(input is hidden): '), { what: 'the token prompt' });
    child.stdin!.write(`${builder.token}\r`);
    expect(await exited(child), output()).toBe(0);
    child.stdin!.end();
    expect(output()).not.toContain(builder.token);
    expect(output()).toContain('sender policy: wrote [bridge] allow_from');
    expect(output()).toContain('next: run `oh-hai bridge`');
    expect(readFileSync(path.join(configDir(t), 'config.toml'), 'utf8')).toContain(`url = "${hub.url}"`);
  });

  it('--token-stdin: the token is read from stdin, never from argv', async () => {
    t = tempEnv();
    const child = startOhHai(['login', '--hub', hub.url, '--token-stdin'], { env: t.env });
    const result = collect(child);
    await waitFor(() => cmdlines(child.pid!).some((l) => l.includes('--token-stdin')), { what: 'the login process' });
    for (const line of [...cmdlines(child.pid!), ...cmdlines(hub.proc.pid!)]) expect(line).not.toContain(builder.token);
    child.stdin!.end(builder.token);
    const r = await result;
    expect(r.code, r.stderr).toBe(0);
    expect(credentialsText(t)).toContain(builder.token);
  });

  it('keeps one entry per agent, picks with --agent, and logout forgets exactly what it names', async () => {
    t = tempEnv({ MA2H_HUB_URL: hub.url });
    for (const a of [builder, reviewer, builder]) expect((await runOhHai(['login', '--token-stdin'], { env: t.env, input: a.token })).code).toBe(0);
    const stored = JSON.parse(credentialsText(t)) as { hubs: { hub: string; agents: { id: string }[] }[] };
    expect(stored.hubs).toHaveLength(1);
    expect(stored.hubs[0]!.agents.map((a) => a.id).sort()).toEqual([builder.id, reviewer.id].sort());

    const several = await runOhHai(['upgrade'], { env: t.env });
    expect(several.code).toBe(2);
    expect(several.stderr).toContain('several identities');
    expect(several.stderr).toContain('pick one with --agent <id>');
    expect((await runOhHai(['upgrade', '--agent', reviewer.id], { env: t.env })).code).toBe(0);

    const one = await runOhHai(['logout', '--agent', builder.id], { env: t.env });
    expect(one.code).toBe(0);
    expect(one.stderr).toContain(`removed the agent token of ${builder.id} for ${hub.url}`);
    expect(one.stderr).toContain('the Hub keeps honouring a token until it is revoked there');
    expect(credentialsText(t)).not.toContain(builder.token);
    expect(credentialsText(t)).toContain(reviewer.token);

    const none = await runOhHai(['logout', '--human'], { env: t.env });
    expect(none.stderr).toContain(`no human token stored for ${hub.url}`);

    const all = await runOhHai(['logout'], { env: { ...t.env, OH_HAI_TOKEN: 'x' } });
    expect(all.code).toBe(0);
    expect(all.stderr).toContain(`removed the agent token of ${reviewer.id}`);
    expect(all.stderr).toContain('OH_HAI_TOKEN is set in this environment and outranks the credentials file');
    expect(JSON.parse(credentialsText(t))).toEqual({ version: 1, hubs: [] });
  });

  it.each([
    [
      'a revoked token',
      async () => {
        const gone = await hub.mintAgent('gone');
        await hubCall(hub, 'POST', `/v1/account/agents/${gone.id}/revoke`, { token: hub.humanToken, body: {} });
        return { args: ['login', '--token-stdin'], input: gone.token };
      },
      3,
      'refused the token at GET /v1/whoami (401 unauthorized',
    ],
    [
      'the human token without --human',
      async () => ({ args: ['login', '--token-stdin'], input: hub.humanToken }),
      2,
      "that is the account's human token; to store it as such",
    ],
    ['an agent token with --human', async () => ({ args: ['login', '--human', '--token-stdin'], input: builder.token }), 2, 'that is an agent token'],
    ['empty stdin', async () => ({ args: ['login', '--token-stdin'], input: '\n' }), 2, 'the token read from stdin is unusable because it is empty'],
  ])('refuses %s and stores nothing', async (_what, make, exit, message) => {
    t = tempEnv({ MA2H_HUB_URL: hub.url });
    const { args, input } = await make();
    const r = await runOhHai(args, { env: t.env, input });
    expect(r.code, r.stderr).toBe(exit);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('FATAL');
    expect(() => credentialsText(t)).toThrow();
  });
});

describe('refusals that need no Hub', () => {
  it.each([
    [['login', '--hub', 'http://127.0.0.1:9', '--token', 'tok_in_argv'], 'token_in_argv', 'a token is never taken as a flag value'],
    [['setup', '--token-stdin'], 'no_hub_url', 'no Hub URL and no terminal to ask on: pass it with --hub <url>'],
    [['login', '--hub', 'http://127.0.0.1:9'], 'no_token', 'no terminal to prompt on: pass the token on stdin with --token-stdin'],
    [['login', '--token-stdin'], 'no_hub_url', 'no Hub URL is configured: pass --hub <url>, export MA2H_HUB_URL=<url>'],
    [['login', '--hub', 'hub.example', '--token-stdin'], 'invalid_hub_url', '--hub: "hub.example" is not a URL'],
  ])('%j → exit 2 (%s)', async (args, code, message) => {
    t = tempEnv();
    const r = await runOhHai(args, { env: t.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`FATAL (exit 2, ${code}) — ${message}`);
  });

  it('a project .oh-hai/config.toml that sets [bridge] is refused, naming the file and why', async () => {
    t = tempEnv();
    const repo = path.join(t.root, 'repo');
    mkdirSync(path.join(repo, '.oh-hai'), { recursive: true });
    mkdirSync(path.join(repo, 'src'));
    writeFileSync(path.join(repo, '.oh-hai', 'config.toml'), '[bridge]\nallow_from = ["any-in-account"]\n');
    const r = await runOhHai(['login', '--hub', 'http://127.0.0.1:9', '--token-stdin'], { env: t.env, cwd: path.join(repo, 'src'), input: 'tok' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${path.join(repo, '.oh-hai', 'config.toml')}: a project config may not set [bridge]`);
    expect(r.stderr).toContain('a repository must not widen who may ask your agent');
  });

  it('a token from the environment is never sent to a Hub only a project file names: bridge, send and doctor refuse, and that Hub hears nothing', async () => {
    t = tempEnv();
    const heard: string[] = [];
    const repoHub = createServer((req, res) => {
      heard.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => repoHub.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(repoHub.address() as AddressInfo).port}`;
      const repo = path.join(t.root, 'repo');
      mkdirSync(path.join(repo, '.oh-hai'), { recursive: true });
      const file = path.join(repo, '.oh-hai', 'config.toml');
      writeFileSync(file, `[hub]\nurl = "${url}"\n`);
      const env = { ...t.env, OH_HAI_TOKEN: 'S3CRET', MA2H_AGENT_SESSION_ID: 'repo-run' };
      for (const args of [
        ['bridge', '--wait', '0'],
        ['send', '--to', 'agent:agt_peer', 'hello'],
        ['session', 'status'],
      ]) {
        const r = await runOhHai(args, { env, cwd: repo });
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`FATAL (exit 2, project_hub_unconfirmed) — ${file} points oh-hai at the Hub ${url}`);
        expect(r.stderr).toContain(`export MA2H_HUB_URL=${url}`);
        expect(r.stderr).not.toContain('S3CRET');
        expect(r.stderr).not.toContain('lease —');
      }
      const doctor = await runOhHai(['doctor', '--json'], { env, cwd: repo });
      const config = (JSON.parse(doctor.stdout) as { checks: { name: string; status: string; detail: string }[] }).checks.find((c) => c.name === 'config');
      expect(config).toMatchObject({ status: 'fail' });
      expect(config!.detail).toContain(`${file} points oh-hai at the Hub ${url}`);
      expect(heard).toEqual([]);
    } finally {
      await new Promise((resolve) => repoHub.close(resolve));
    }
  });

  it('a wrong type and a syntax error in the user config name the file, the key or line, and what was expected', async () => {
    t = tempEnv();
    const file = path.join(configDir(t), 'config.toml');
    writeUserConfig(t, '[bridge]\nunattended_max_seconds = 0\n');
    const zero = await runOhHai(['upgrade', '--hub', 'http://127.0.0.1:9'], { env: t.env });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain(`${file}: [bridge] unattended_max_seconds is 0`);
    expect(zero.stderr).toContain('never disabled the unattended bound');
    writeUserConfig(t, '[hub]\nurl = "https://h.example"\n[bridge\n');
    const syntax = await runOhHai(['logout'], { env: t.env });
    expect(syntax.code).toBe(2);
    expect(syntax.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, line 3, column \\d+: invalid TOML`));
  });

  it('setup refuses a --hub that differs from the one the user config names', async () => {
    t = tempEnv();
    writeUserConfig(t, '[hub]\nurl = "https://one.example"\n');
    const r = await runOhHai(['setup', '--hub', 'https://two.example', '--token-stdin'], { env: t.env, input: 'tok' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('your user config already names the Hub https://one.example, not https://two.example');
  });
});
