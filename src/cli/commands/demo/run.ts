import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HubClient, type HubResult } from '../../../hub/client/index.js';
import { EXIT } from '../../exit-codes.js';
import type { CliIO } from '../../io.js';
import { VERSION } from '../../main.js';
import type { Outcome } from '../../outcome.js';

class DemoStepFailed extends Error {}

/** Unwrap a Hub answer or stop the demo naming the step that failed. */
function must<T>(step: string, r: HubResult<T>): T {
  if (r.ok) return r.value;
  const f = r.failure;
  throw new DemoStepFailed(`${step}: ${f.kind === 'http' ? `${f.status} ${f.code} — ${f.message}` : f.message}`);
}

/**
 * The whole MA2H round trip on an embedded Hub: mint two agents, one sends the other a
 * message, the recipient drains and acknowledges it, the sender sees the track and the
 * receipt. Everything lives in a temp dir that is removed at the end.
 */
export async function runDemo(io: CliIO): Promise<Outcome> {
  const say = (line: string) => io.stdout.write(line + '\n');
  const dir = mkdtempSync(path.join(io.env.TMPDIR ?? os.tmpdir(), 'oh-hai-demo-'));
  const { createHubServer, defaultHubConfig } = await import('../../../hub/server/index.js');
  const hub = await createHubServer({
    config: { ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: randomBytes(32).toString('hex'), version: VERSION }), port: 0 },
    clock: io.clock,
    pid: io.pid,
    log: (line) => io.stderr.write(line + '\n'),
  });
  const clients: HubClient[] = [];
  const client = (token: string) => {
    const c = new HubClient({ baseUrl: hub.url, token, userAgent: 'oh-hai demo' });
    clients.push(c);
    return c;
  };
  try {
    say(`1. started an embedded Hub at ${hub.url} (data in a temp dir)`);
    const human = client(readFileSync(hub.humanTokenPath, 'utf8').trim());
    const alice = must('mint alice', await human.mintAgent({ label: 'alice' }));
    const bob = must('mint bob', await human.mintAgent({ label: 'bob' }));
    say(`2. minted two agents: alice = ${alice.agent.id}, bob = ${bob.agent.id}`);
    const asAlice = client(alice.token);
    const asBob = client(bob.token);
    const sent = must('send', await asAlice.send({ to: `agent:${bob.agent.id}`, intent: 'notify', text: 'Hello from alice — oh hai!' }));
    say(`3. alice sent ${sent.message.id} to ${sent.message.to}: state ${sent.message.state} (queued is accepted, not read)`);
    const drained = must('drain', await asBob.drain());
    const ids: string[] = [];
    for (const d of drained.messages as { entry: { id: string; from: string; text?: string }; signature: string }[]) {
      ids.push(d.entry.id);
      say(`4. bob drained ${d.entry.id} from ${d.entry.from}: "${d.entry.text ?? ''}" (signature ${d.signature.slice(0, 30)}…)`);
    }
    const acked = must('ack', await asBob.ack({ delivered: ids, acknowledged: ids }));
    say(`5. bob acknowledged ${acked.acknowledged} entr${acked.acknowledged === 1 ? 'y' : 'ies'} after reading`);
    const track = must('read the track', await asAlice.getMessage(sent.message.id));
    say(`6. alice reads the delivery track: ${track.track.map((t) => t.state).join(' → ')}`);
    const receipts = must('drain receipts', await asAlice.drain());
    for (const d of receipts.messages as { entry: { kind: string; status?: string; message_id?: string } }[]) {
      if (d.entry.kind === 'receipt') say(`7. alice got a receipt: ${d.entry.message_id} ${d.entry.status}`);
    }
    say('done: the Hub is shut down and its temp dir removed');
    return { exit: EXIT.ok, style: 'silent' };
  } catch (e) {
    if (!(e instanceof DemoStepFailed)) throw e;
    return { exit: EXIT.unreachable, code: 'demo_failed', message: e.message };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
