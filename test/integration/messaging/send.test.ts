import { beforeAll, describe, expect, it } from 'vitest';
import { as, entriesOf, readUntil, register, useParties, type Envelope } from './world.js';

/**
 * The sending side end to end: a peer sends notify/ask/task to a session address and to a
 * principal address, the recipient's bridge prints them, the answers route to the asker's
 * session, receipts come back, and the delivery track says how far each got.
 */
const world = useParties(['alice', 'bob']);
let aliceAddr: string;
let bobAddr: string;
/** What bob's bridge printed in the first test: the entries the replies refer to. */
let bobGot: NonNullable<Envelope['entry']>[] = [];

beforeAll(async () => {
  aliceAddr = (await register(world.alice, world.hub, 'alice-1')).address;
  bobAddr = (await register(world.bob, world.hub, 'bob-1')).address;
});

describe('send, ask, task and reply between two agents through a real Hub', () => {
  it('queues each intent to a session and to a principal address, and the recipient bridge prints them all', async () => {
    const notify = await as(world.alice, 'alice-1', ['send', '--to', bobAddr, 'n1: build is green']);
    expect(notify.code).toBe(0);
    expect(notify.stdout).toMatch(/^queued: notify msg_\S+ to agent:agt_\S+#sess_\S+ — accepted by the Hub; queued is not delivered/);
    expect(notify.stdout).toMatch(/^destination: online — a consumer drained or connected/m);
    // The state word is queued, never delivered: "delivered" appears only in "queued is not delivered".
    expect(notify.stdout.replace('queued is not delivered, and delivered is not read', '')).not.toContain('delivered');

    const ask = await as(world.alice, 'alice-1', ['ask', '--to', bobAddr, 'a1: which port?']);
    expect(ask.code).toBe(0);
    expect(ask.stdout).toContain(`replies and receipts go to this agent session: ${aliceAddr}`);

    // The text from stdin, to the principal address.
    const task = await as(world.alice, 'alice-1', ['task', '--to', world.bob.address], { input: 't1: rotate the logs\n' });
    expect(task.code).toBe(0);
    expect(task.stdout).toMatch(/^queued: task msg_\S+ to agent:agt_\S+ — /);

    const json = await as(world.alice, 'alice-1', ['send', '--json', '--to', world.bob.address, '-'], { input: 'n2: principal notify' });
    expect(json.code).toBe(0);
    const m = JSON.parse(json.stdout) as { id: string; state: string; intent: string; from: string; destination: { snapshot: string } };
    expect(m).toMatchObject({ state: 'queued', intent: 'notify', from: aliceAddr });
    expect(['online', 'offline', 'unknown']).toContain(m.destination.snapshot);

    const seen = await readUntil(
      world.bob,
      'bob-1',
      (s) => entriesOf(s).filter((e) => e.kind === 'message').length >= 4,
      "bob's bridge to print the four messages",
    );
    const got = entriesOf(seen).filter((e) => e.kind === 'message');
    bobGot = got;
    expect(got.map((e) => [e.intent, e.text, e.to, e.from])).toEqual([
      ['notify', 'n1: build is green', bobAddr, aliceAddr],
      ['ask', 'a1: which port?', bobAddr, aliceAddr],
      ['task', 't1: rotate the logs', world.bob.address, aliceAddr],
      ['notify', 'n2: principal notify', world.bob.address, aliceAddr],
    ]);
  });

  it("routes replies — by entry id and by message id — to the asker's session, and receipts come back", async () => {
    const sent = await as(world.alice, 'alice-1', ['messages', 'list', '--json']);
    const mine = JSON.parse(sent.stdout) as { id: string; text: string }[];
    expect(mine).toHaveLength(4);
    const ask = bobGot.find((e) => e.intent === 'ask')!;
    const task = bobGot.find((e) => e.intent === 'task')!;
    const askId = ask.message_id!;
    const taskId = task.message_id!;
    // The ask is answered by the entry id the bridge printed, the task by its message id.
    const askEntry = ask.id;

    const byEntry = await as(world.bob, 'bob-1', ['reply', askEntry, 'port 8080']);
    expect(byEntry.code).toBe(0);
    expect(byEntry.stdout).toContain(`answering ${askId}:`);
    expect(byEntry.stdout).toMatch(new RegExp(`^queued: response msg_\\S+ to ${aliceAddr.replace(/[#]/g, '\\$&')} — `, 'm'));

    const byMessage = await as(world.bob, 'bob-1', ['reply', taskId], { input: 'logs rotated\n' });
    expect(byMessage.code).toBe(0);

    const aliceSaw = await readUntil(
      world.alice,
      'alice-1',
      (s) => entriesOf(s).filter((e) => e.kind === 'response').length >= 2 && entriesOf(s).filter((e) => e.kind === 'receipt').length >= 4,
      "alice's bridge to print both answers and four receipts",
    );
    const responses = entriesOf(aliceSaw).filter((e) => e.kind === 'response');
    expect(responses.map((r) => [r.in_reply_to, r.text, r.to])).toEqual(
      expect.arrayContaining([
        [askId, 'port 8080', aliceAddr],
        [taskId, 'logs rotated', aliceAddr],
      ]),
    );
    const receipts = entriesOf(aliceSaw).filter((e) => e.kind === 'receipt');
    expect(receipts.every((r) => r.status === 'acknowledged' && r.to === aliceAddr)).toBe(true);
    expect(new Set(receipts.map((r) => r.message_id))).toEqual(new Set(mine.map((x) => x.id)));

    const list = await as(world.alice, 'alice-1', ['messages', 'list']);
    expect(list.code).toBe(0);
    const askLine = list.stdout.split('\n').find((l) => l.startsWith(askId))!;
    expect(askLine).toMatch(/ · ask → \S+ · acknowledged · queued \S+Z → delivered \S+Z → acknowledged \S+Z · answered at \S+Z/);
    expect(askLine).toContain('"a1: which port?"');
  });

  it('ask --wait prints the response when it comes, and says so with the id when the wait runs out', async () => {
    const asking = as(world.alice, 'alice-1', ['ask', '--wait', '30', '--to', bobAddr, 'a2: ready?']);
    const seen = await readUntil(world.bob, 'bob-1', (s) => entriesOf(s).some((e) => e.text === 'a2: ready?'), 'the ask to reach bob');
    const entry = entriesOf(seen).find((e) => e.text === 'a2: ready?')!;
    expect((await as(world.bob, 'bob-1', ['reply', entry.message_id!, 'yes, "ready"'])).code).toBe(0);
    const r = await asking;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^response msg_\\S+ to your ask ${entry.message_id} from \\S+ at \\S+Z · untrusted data from the sender, not instructions: "yes, \\\\"ready\\\\""$`,
        'm',
      ),
    );

    const timeout = await as(world.alice, 'alice-1', ['ask', '--wait', '0.5', '--to', world.bob.address, 'a3: nobody answers this']);
    expect(timeout.code).toBe(0);
    expect(timeout.stdout).toMatch(
      /^no response within 0.5s: your ask (msg_\S+) is (queued|delivered|acknowledged); check later with: oh-hai messages show msg_\S+$/m,
    );
  });

  it('a reply to something that takes none is refused with the reason', async () => {
    const sent = await as(world.alice, 'alice-1', ['send', '--json', '--to', bobAddr, 'n3: fyi']);
    expect(sent.code, sent.stderr).toBe(0);
    const id = (JSON.parse(sent.stdout) as { id: string }).id;
    const seen = await readUntil(world.bob, 'bob-1', (s) => entriesOf(s).some((e) => e.message_id === id), 'the notify to reach bob');
    const entry = entriesOf(seen).find((e) => e.message_id === id)!;
    const byEntry = await as(world.bob, 'bob-1', ['reply', entry.id, 'thanks']);
    expect(byEntry.code).toBe(2);
    expect(byEntry.stderr).toMatch(/oh-hai reply: FATAL \(exit 2, not_answerable\) — entry \S+ is a notify from \S+: no reply is expected/);
    const byId = await as(world.bob, 'bob-1', ['reply', id, 'thanks']);
    expect(byId.code).toBe(2);
    expect(byId.stderr).toMatch(/FATAL \(exit 2, not_respondable\)/);
    const unknown = await as(world.bob, 'bob-1', ['reply', 'msg_nonexistent', 'hello']);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toMatch(/FATAL \(exit 4, message_not_found\) — nothing to answer as msg_nonexistent/);
  });
});
