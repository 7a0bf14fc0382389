import { beforeAll, describe, expect, it } from 'vitest';
import { killAndWait } from '../../helpers/process.js';
import { waitFor } from '../../helpers/wait.js';
import { as, consumerPid, entriesOf, stateDirOf, readUntil, register, useParties } from './world.js';

interface Shown {
  id: string;
  state: string;
  prior: string | null;
  track: { state: string; at: string }[];
}

/** The delivery track through every state, with the Hub's lease and TTL knobs shrunk so lapses happen in seconds. */
describe('the delivery track: queued → delivered → acknowledged, bounced with its prior, expired', () => {
  const world = useParties(['alice', 'bob'], { args: ['--lease-min-seconds', '1', '--lease-default-seconds', '4'] });

  beforeAll(async () => {
    await register(world.alice, world.hub, 'alice-1');
  });

  const show = async (id: string): Promise<Shown> => JSON.parse((await as(world.alice, 'alice-1', ['messages', 'show', '--json', id])).stdout) as Shown;
  const send = async (to: string, text: string): Promise<string> => {
    const r = await as(world.alice, 'alice-1', ['send', '--json', '--to', to, text]);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { id: string }).id;
  };
  const reaches = (id: string, state: string) =>
    waitFor(async () => ((await show(id)).state === state ? show(id) : null), { timeoutMs: 30_000, what: `${id} to be ${state}` });

  it('shows each state with the right prior, in list and show, and the receipts say the same', async () => {
    const s1 = await register(world.bob, world.hub, 'bob-1');

    // A consumer holds it, no reader has read it: delivered.
    const m1 = await send(s1.address, 'm1: read me');
    await reaches(m1, 'delivered');
    await readUntil(world.bob, 'bob-1', (s) => entriesOf(s).some((e) => e.message_id === m1), 'bob to print m1');
    const acked = await reaches(m1, 'acknowledged');
    expect(acked.track.map((t) => t.state)).toEqual(['queued', 'delivered', 'acknowledged']);

    // Held but never read when its session lapses: bounced, prior delivered.
    const m2 = await send(s1.address, 'm2: held, never read');
    await reaches(m2, 'delivered');
    await killAndWait(consumerPid(stateDirOf(world.bob, world.hub, 'bob-1'))!);
    const b2 = await reaches(m2, 'bounced');
    expect(b2.prior).toBe('delivered');

    // Never held by anything when its session lapses: bounced, prior queued.
    const s2 = await register(world.bob, world.hub, 'bob-2');
    await killAndWait(consumerPid(stateDirOf(world.bob, world.hub, 'bob-2'))!);
    const m3 = await send(s2.address, 'm3: never seen');
    const b3 = await reaches(m3, 'bounced');
    expect(b3.prior).toBe('queued');

    const list = await as(world.alice, 'alice-1', ['messages', 'list']);
    expect(list.code).toBe(0);
    const line = (id: string) => list.stdout.split('\n').find((l) => l.startsWith(id))!;
    expect(line(m1)).toMatch(/ · acknowledged · queued \S+Z → delivered \S+Z → acknowledged \S+Z · "m1: read me"$/);
    expect(line(m2)).toMatch(/ · bounced · queued \S+Z → delivered \S+Z → bounced \S+Z \(prior: delivered — seen but never confirmed\)/);
    expect(line(m3)).toMatch(/ · bounced · queued \S+Z → bounced \S+Z \(prior: queued — never seen\)/);
    // The instants are the Hub's, verbatim.
    expect(line(m2)).toContain(`bounced ${b2.track.at(-1)!.at}`);

    const shown = await as(world.alice, 'alice-1', ['messages', 'show', m2]);
    expect(shown.stdout).toContain('state: bounced (prior: delivered — seen but never confirmed)');

    const seen = await readUntil(
      world.alice,
      'alice-1',
      (s) => [m1, m2, m3].every((id) => entriesOf(s).some((e) => e.kind === 'receipt' && e.message_id === id)),
      'alice to print the three receipts',
    );
    const receipt = (id: string) => entriesOf(seen).find((e) => e.kind === 'receipt' && e.message_id === id)!;
    expect(receipt(m1)).toMatchObject({ status: 'acknowledged' });
    expect(receipt(m2)).toMatchObject({ status: 'bounced', prior: 'delivered' });
    expect(receipt(m3)).toMatchObject({ status: 'bounced', prior: 'queued' });
  });

  it('--help spells out what bounced with prior queued and prior delivered mean', async () => {
    const r = await as(world.alice, null, ['messages', 'list', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/prior: queued\s+never seen/);
    expect(r.stdout).toMatch(/prior: delivered\s+seen but never confirmed/);
  });
});

describe('the delivery track: expired', () => {
  const world = useParties(['alice', 'carol'], { args: ['--message-ttl-seconds', '1'] });

  it('a message nobody acknowledges within the TTL expires, prior queued', async () => {
    const r = await as(world.alice, null, ['send', '--json', '--to', world.carol.address, 'nobody drains this']);
    const id = (JSON.parse(r.stdout) as { id: string }).id;
    await waitFor(async () => (await as(world.alice, null, ['messages', 'list'])).stdout.includes('expired'), { timeoutMs: 30_000, what: `${id} to expire` });
    const list = await as(world.alice, null, ['messages', 'list']);
    expect(list.stdout).toMatch(
      new RegExp(`^${id} · notify → ${world.carol.address} · expired · queued \\S+Z → expired \\S+Z \\(prior: queued — never seen\\)`, 'm'),
    );
  });
});
