import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../../helpers/cli.js';
import { killAndWait } from '../../helpers/process.js';
import { waitFor } from '../../helpers/wait.js';
import { as, consumerPid, stateDirOf, register, startBridge, useParties } from './world.js';

interface Row {
  address: string;
  session_id: string;
  reachability: string;
  local: { entry: string; consumer_alive: boolean | null; consumer_pid: number | null; reader_attending: boolean | null; lag: number | null } | null;
}
interface View {
  sessions: Row[];
  /** What --json said on stderr: the local entries that matched no row. */
  stderr: string;
}

/**
 * `oh-hai fleet ls` from alice's machine: one session per annotation case, all live at the
 * Hub (default lease), with bob's session on a machine of its own.
 */
describe('fleet ls: every addressable session, annotated from this host where it has state', () => {
  const world = useParties(['alice', 'bob']);
  let reader: ChildProcess | null = null;
  const addr: Record<string, string> = {};

  beforeAll(async () => {
    for (const s of ['a-live', 'a-lag', 'a-dead', 'a-unknown', 'a-garbled']) addr[s] = (await register(world.alice, world.hub, s)).address;
    addr['b-elsewhere'] = (await register(world.bob, world.hub, 'b-elsewhere')).address;
  });

  afterAll(() => {
    reader?.kill('SIGTERM');
  });

  const fleet = async (): Promise<{ text: string; view: View }> => {
    const [text, json] = await Promise.all([
      as(world.alice, null, ['fleet', 'ls', '--sessions']),
      as(world.alice, null, ['fleet', 'ls', '--sessions', '--json']),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(json.code, json.stderr).toBe(0);
    return { text: text.stdout, view: { sessions: JSON.parse(json.stdout) as Row[], stderr: json.stderr } };
  };
  const lineOf = (text: string, address: string) => text.split('\n').find((l) => l.startsWith(address + ' ')) ?? '';

  it('annotates each case: live and attending, lag, DEAD, UNKNOWN / unknown, and no local state here', async () => {
    // Live and attending: a bridge waiting in the background.
    reader = startBridge(world.alice, 'a-live', 60);
    const live = stateDirOf(world.alice, world.hub, 'a-live');

    // Lag: the connection keeps spooling, nobody reads.
    for (const t of ['one', 'two']) expect((await as(world.bob, null, ['send', '--to', addr['a-lag']!, t])).code).toBe(0);

    // DEAD: the connection was killed without recording why.
    const deadDir = stateDirOf(world.alice, world.hub, 'a-dead');
    await killAndWait(consumerPid(deadDir)!);

    // UNKNOWN: the records are there and cannot be read.
    const unknownDir = stateDirOf(world.alice, world.hub, 'a-unknown');
    await killAndWait(consumerPid(unknownDir)!);
    writeFileSync(path.join(unknownDir, 'consumer.json'), '{"pid": 12, garbage');
    writeFileSync(path.join(unknownDir, 'reader.json'), '\u0000\u0001 not json');

    // A session record that cannot be read: no row can be matched to it, and the listing says so.
    const garbledDir = stateDirOf(world.alice, world.hub, 'a-garbled');
    await killAndWait(consumerPid(garbledDir)!);
    writeFileSync(path.join(garbledDir, 'session.json'), 'garbage');

    const { text, view } = await waitFor(
      async () => {
        const f = await fleet();
        const row = (a: string) => f.view.sessions.find((r) => r.address === a);
        return row(addr['a-live']!)?.local?.reader_attending === true && row(addr['a-lag']!)?.local?.lag === 2 ? f : null;
      },
      { timeoutMs: 30_000, what: 'the live reader to attend and the lagging entry to hold two records' },
    );
    const row = (a: string) => view.sessions.find((r) => r.address === a)!;

    expect(lineOf(text, addr['a-live']!)).toMatch(new RegExp(`· home found · consumer live \\(pid ${consumerPid(live)}\\) / reader attending · 0 unread$`));
    expect(row(addr['a-live']!).local).toMatchObject({ consumer_alive: true, reader_attending: true, lag: 0 });

    expect(lineOf(text, addr['a-lag']!)).toMatch(/· home found · consumer live \(pid \d+\) \/ reader not attending \(.+\) · 2 unread$/);

    expect(lineOf(text, addr['a-dead']!)).toMatch(/· home found · consumer DEAD \(pid \d+ on \S+ no longer exists/);
    expect(row(addr['a-dead']!).local).toMatchObject({ consumer_alive: false });

    expect(lineOf(text, addr['a-unknown']!)).toMatch(
      /· home found · consumer UNKNOWN \/ reader unknown · 0 unread — the consumer record could not be read \(.*consumer\.json is not valid JSON.*\); the reader record could not be read/,
    );
    const unknown = row(addr['a-unknown']!).local!;
    expect(unknown.consumer_alive).toBeNull();
    expect(unknown.reader_attending).toBeNull();

    expect(lineOf(text, addr['b-elsewhere']!)).toMatch(/· no local state here$/);
    expect(row(addr['b-elsewhere']!).local).toBeNull();

    expect(lineOf(text, addr['a-garbled']!)).toMatch(/· no local state here$/);
    expect(view.stderr).toMatch(new RegExp(`local state entry ${garbledDir}: its session record could not be read \\(.*session.json is not valid JSON`));
    expect(text).toContain(`local state entry ${garbledDir}: its session record could not be read`);

    // Reachability and lease come from the Hub, verbatim, on every row.
    for (const r of view.sessions) expect(lineOf(text, r.address)).toMatch(new RegExp(`· ${r.reachability} · active, lease expires \\S+Z \\(Hub's clock`));

    reader.kill('SIGTERM');
    await collect(reader);
    reader = null;
  });

  it('without --sessions: every agent of the account, with its reachability and live sessions, as a table and as a JSON array', async () => {
    const quiet = await world.hub.mintAgent('quiet');
    const [text, json] = await Promise.all([as(world.alice, null, ['fleet', 'ls']), as(world.alice, null, ['fleet', 'ls', '--json'])]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('LABEL\tADDRESS\tREACHABILITY\tLIVE SESSIONS');
    expect(lines).toContain(`quiet\tagent:${quiet.id}\tno live session\t0`);
    expect(lines.find((l) => l.startsWith('bob\t'))).toMatch(new RegExp(`^bob\tagent:${world.bob.id}\t(online|offline|unknown)\t1 \\(sess_`));
    const agents = JSON.parse(json.stdout) as { id: string; label: string; live_sessions: number; reachability: string }[];
    expect(agents.find((x) => x.id === quiet.id)).toMatchObject({ label: 'quiet', live_sessions: 0, reachability: 'no_session' });
    expect(agents.find((x) => x.id === world.alice.id)?.live_sessions).toBeGreaterThanOrEqual(4);
  });

  it('--help says not to relaunch on UNKNOWN, and why', async () => {
    const r = await as(world.alice, null, ['fleet', 'ls', '--help']);
    expect(r.stdout).toMatch(
      /DO NOT RELAUNCH ON THIS: it is not evidence that nothing is running, and a relaunch\s+against a live connection changes the session's address/,
    );
    expect(r.stdout).toMatch(/null, not false, under --json/);
  });
});
