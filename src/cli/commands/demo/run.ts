import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HubClient, type HubResult } from '../../../hub/client/index.js';
import type { Message } from '../../../hub/contract/index.js';
import { EXIT, type Outcome, usageError } from '../../../core/index.js';
import type { CliIO } from '../../io.js';
import { VERSION } from '../../version.js';

class DemoStepFailed extends Error {
  constructor(
    message: string,
    readonly exit: number = EXIT.unreachable,
  ) {
    super(message);
  }
}

/** Unwrap a Hub answer or stop the demo naming the step that failed. */
function must<T>(step: string, r: HubResult<T>): T {
  if (r.ok) return r.value;
  const f = r.failure;
  throw new DemoStepFailed(`${step}: ${f.kind === 'http' ? `${f.status} ${f.code} — ${f.message}` : f.message}`);
}

/** Run this same CLI as a child, its stdout and stderr passed through verbatim. */
function runSelf(io: CliIO, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(io.self.execPath, [...io.self.args, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      io.stdout.write(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => io.stderr.write(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

const WAIT_SECONDS = 30;

/**
 * The bridge demo on an embedded Hub: alice sends bob a message, and a real `oh-hai bridge`
 * run as bob prints it; alice then sees the track reach acknowledged, and bob's session is
 * stood down. Bob's state, config and credential live in a temp dir that is removed at the
 * end, so the demo never touches the user's own; his token reaches the bridge in its
 * environment, never in argv.
 */
export async function runDemo(io: CliIO): Promise<Outcome> {
  const say = (line: string) => io.stdout.write(line + '\n');
  const { createHubServer, defaultHubConfig, HUMAN_TOKEN_FILE, parseSqliteDriverChoice, SQLITE_DRIVER_ENV, SQLITE_UNAVAILABLE } =
    await import('../../../hub/server/index.js');
  const driver = parseSqliteDriverChoice(io.env[SQLITE_DRIVER_ENV]);
  if (!driver.ok) return usageError(driver.reason, 'invalid_setting');
  const dir = mkdtempSync(path.join(io.env.TMPDIR ?? os.tmpdir(), 'oh-hai-demo-'));
  let hub;
  try {
    hub = await createHubServer({
      config: {
        ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: randomBytes(32).toString('hex'), version: VERSION }),
        port: 0,
        sqliteDriver: driver.value,
      },
      clock: io.clock,
      pid: io.pid,
      log: (line) => io.stderr.write(line + '\n'),
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    if ((e as { code?: unknown }).code === SQLITE_UNAVAILABLE) return usageError((e as Error).message, 'sqlite_unavailable');
    throw e;
  }
  const clients: HubClient[] = [];
  const client = (token: string) => {
    const c = new HubClient({ baseUrl: hub.url, token, userAgent: 'oh-hai demo' });
    clients.push(c);
    return c;
  };
  try {
    say(`1. started an embedded Hub at ${hub.url} (data in a temp dir)`);
    // An embedded SQLite Hub on a fresh data dir always writes its human token file.
    const human = client(readFileSync(hub.humanTokenPath ?? path.join(hub.dataDir, HUMAN_TOKEN_FILE), 'utf8').trim());
    const alice = must('mint alice', await human.mintAgent({ label: 'alice' }));
    const bob = must('mint bob', await human.mintAgent({ label: 'bob' }));
    say(`2. minted two agents: alice = ${alice.agent.id}, bob = ${bob.agent.id}`);
    const asAlice = client(alice.token);
    const sent = must('send', await asAlice.send({ to: `agent:${bob.agent.id}`, intent: 'notify', text: 'Hello from alice — oh hai!' }));
    say(`3. alice sent ${sent.message.id} to ${sent.message.to}: state ${sent.message.state} (queued is accepted, not read)`);

    const bobEnv: NodeJS.ProcessEnv = {
      PATH: io.env.PATH,
      TMPDIR: io.env.TMPDIR,
      LANG: io.env.LANG,
      HOME: path.join(dir, 'home'),
      XDG_STATE_HOME: path.join(dir, 'state'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      MA2H_HUB_URL: hub.url,
      OH_HAI_TOKEN: bob.token,
      // A connection left behind by a failed step stops soon after the Hub does.
      OH_HAI_MAX_RETRIES: '1',
    };
    say(`4. bob runs: oh-hai bridge --session demo --wait ${WAIT_SECONDS}`);
    const bridge = await runSelf(io, ['bridge', '--session', 'demo', '--wait', String(WAIT_SECONDS)], bobEnv);
    if (bridge.code !== EXIT.ok)
      throw new DemoStepFailed(`oh-hai bridge exited ${bridge.code ?? 'on a signal'} (its stderr above says why)`, bridge.code ?? EXIT.internal);
    if (!bridge.stdout.includes(sent.message.id)) throw new DemoStepFailed(`oh-hai bridge printed nothing about ${sent.message.id} within ${WAIT_SECONDS} s`);

    const track = await acknowledged(asAlice, sent.message.id, io);
    say(`5. alice reads the delivery track: ${track.track.map((t) => t.state).join(' → ')}`);
    say('6. bob stands his session down: oh-hai session close --session demo');
    const close = await runSelf(io, ['session', 'close', '--session', 'demo'], bobEnv);
    if (close.code !== EXIT.ok) throw new DemoStepFailed(`oh-hai session close exited ${close.code ?? 'on a signal'}`, close.code ?? EXIT.internal);
    say('done: the Hub is shut down and its temp dir removed');
    return { exit: EXIT.ok, style: 'silent' };
  } catch (e) {
    if (!(e instanceof DemoStepFailed)) throw e;
    return { exit: e.exit, code: 'demo_failed', message: e.message };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The consumer acks once the reader's cursor has passed the record: wait (bounded) for the track to say so. */
async function acknowledged(sender: HubClient, id: string, io: CliIO): Promise<Message> {
  const deadline = io.clock.now() + WAIT_SECONDS * 1000;
  for (;;) {
    const m = must('read the track', await sender.getMessage(id, { wait: 5 }));
    if (m.state === 'acknowledged') return m;
    if (io.clock.now() > deadline) throw new DemoStepFailed(`${id} is still ${m.state} after ${WAIT_SECONDS} s`);
  }
}
