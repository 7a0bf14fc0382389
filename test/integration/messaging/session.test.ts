import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { collect } from '../../helpers/cli.js';
import { hubCall } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { parseConsumerRecord, readRecord } from '../../../src/spool/index.js';
import { as, consumerPid, stateDirOf, file, readUntil, register, sessionOf, startBridge, useParties } from './world.js';

interface Track {
  id: string;
  state: string;
  prior: string | null;
  track: { state: string }[];
}

/** What session close says when the connection stood the session down itself and no reader was waiting on it. */
const RELAYS_15 =
  'the next oh-hai bridge exits 15 once, relaying this stand-down (unless an oh-hai bridge waiting on the connection relays it first), and the run after it registers a new session with a new address';

describe('oh-hai session close and status', () => {
  const world = useParties(['alice', 'bob']);

  const messageOf = async (id: string): Promise<Track> => JSON.parse((await as(world.alice, null, ['messages', 'show', '--json', id])).stdout) as Track;

  it('closes during a burst in order — stop, wait, close, forget — losing nothing and registering no replacement', async () => {
    const s = await register(world.bob, world.hub, 'bob-burst');
    const dir = stateDirOf(world.bob, world.hub, 'bob-burst');
    const pid = consumerPid(dir)!;

    // The burst: sends keep going while the session is closed under them.
    const sent: string[] = [];
    const refused: string[] = [];
    let closing: Promise<Awaited<ReturnType<typeof as>>> | null = null;
    for (let i = 0; i < 24; i++) {
      const r = await as(world.alice, null, ['send', '--json', '--to', s.address, `burst ${i}`]);
      if (r.code === 0) sent.push((JSON.parse(r.stdout) as { id: string }).id);
      else {
        expect(r.code, r.stderr).toBe(4);
        expect(r.stderr).toMatch(/FATAL \(exit 4, session_closed\)/);
        refused.push(`burst ${i}`);
      }
      if (i === 8) closing = as(world.bob, 'bob-burst', ['session', 'close']);
    }
    const closed = await closing!;
    expect(closed.code, closed.stderr).toBe(0);
    expect(closed.stdout.split('\n').filter((l) => l !== '')).toEqual([
      expect.stringMatching(
        new RegExp(`^stopped the background connection \\(pid ${pid} on \\S+\\); once it had stopped draining, it stood the session down itself$`),
      ),
      expect.stringMatching(new RegExp(`^closed session ${s.id} \\(${s.address.replace('#', '\\#')}\\) at the Hub at \\S+Z \\(Hub's clock\\)`)),
      `forgot ${s.id} locally (${dir}); ${RELAYS_15}`,
    ]);
    expect(sent.length).toBeGreaterThan(0);

    // The connection stopped draining on our request and closed the session itself: had the
    // close come first, it would have ended on the Hub's `closed` event instead.
    const log = readFileSync(file(dir, 'bridge.log'), 'utf8');
    const standing = log.indexOf(`${pid} standing ${s.id} down at the request of oh-hai session close`);
    expect(standing, log).toBeGreaterThan(-1);
    expect(log.slice(standing)).toMatch(new RegExp(`${pid} consumer stopped: exit 15 \\(session_closed\\) — this agent stood its session ${s.id} `));
    expect(log.slice(standing)).not.toMatch(/address changed|registered session|event closed/);
    // No replacement: nothing of bob's is live at the Hub, and the id is forgotten here.
    const fleet = await hubCall(world.hub, 'GET', '/v1/fleet', { token: world.bob.token });
    expect((fleet.body.sessions as { agent_id: string }[]).filter((r) => r.agent_id === world.bob.id)).toEqual([]);
    expect((await hubCall(world.hub, 'GET', `/v1/sessions/${s.id}`, { token: world.bob.token })).body.session.state).toBe('closed');
    expect(sessionOf(world.bob, world.hub, 'bob-burst')).toBeNull();

    // Nothing lost: every queued send ends acknowledged or bounced, and whatever a consumer held is in bob's spool.
    const spooled = new Set(
      readFileSync(file(dir, 'bridge.ndjson'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { entry?: { message_id?: string } }).entry?.message_id),
    );
    for (const id of sent) {
      const m = await waitFor(
        async () => {
          const t = await messageOf(id);
          return t.state === 'acknowledged' || t.state === 'bounced' ? t : null;
        },
        { what: `${id} to end` },
      );
      if (m.state === 'acknowledged' || m.prior === 'delivered') expect(spooled.has(id), `${id} (${m.state}, prior ${m.prior}) is in the spool`).toBe(true);
    }

    // The next run says once that this agent stood down; the one after starts afresh.
    const next = await as(world.bob, 'bob-burst', ['bridge', '--wait', '0.2']);
    expect(next.code, next.stderr).toBe(15);
    expect(next.stderr).toMatch(
      /^oh-hai bridge: STOOD DOWN \(exit 15, session_closed\) — this agent stood its session \S+ \(\S+\) down \(oh-hai session close\)/m,
    );
    const after = await as(world.bob, 'bob-burst', ['bridge', '--wait', '0.2']);
    expect(after.code, after.stderr).toBe(0);
    const fresh = await waitFor(() => sessionOf(world.bob, world.hub, 'bob-burst'), { what: 'a new session after the stand-down' });
    expect(fresh.id).not.toBe(s.id);
    // 24 sends and 5 other CLI runs one after another: 51 s alone at load 11, 60 s in a CI dry run at load 15.
  }, 240_000);

  it('a reader waiting when the session is closed relays the stand-down (15); the next run starts a new session and does not say 15 again', async () => {
    const s = await register(world.bob, world.hub, 'bob-wait');
    const dir = stateDirOf(world.bob, world.hub, 'bob-wait');
    const reader = startBridge(world.bob, 'bob-wait', 60);
    const readerDone = collect(reader);
    await waitFor(() => readFileSync(file(dir, 'reader.json'), 'utf8').includes(`"pid":${reader.pid}`), { what: 'the reader to attend' });
    const close = await as(world.bob, 'bob-wait', ['session', 'close']);
    expect(close.code, close.stderr).toBe(0);
    const waiting = await readerDone;
    expect(waiting.code, waiting.stderr).toBe(15);
    expect(waiting.stderr).toMatch(
      new RegExp(
        `^oh-hai bridge: STOOD DOWN \\(exit 15, session_closed\\) — this agent stood its session ${s.id} \\(\\S+\\) down \\(oh-hai session close\\): the connection stopped, closed it at the Hub at \\S+Z \\(Hub's clock\\)`,
        'm',
      ),
    );
    expect(waiting.stderr).not.toContain('FATAL');

    const next = await as(world.bob, 'bob-wait', ['bridge', '--wait', '0.2']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).not.toMatch(/STOOD DOWN|exit 15/);
    const fresh = await waitFor(() => sessionOf(world.bob, world.hub, 'bob-wait'), { what: 'a new session after the stand-down' });
    expect(fresh.id).not.toBe(s.id);
    expect(fresh.address).not.toBe(s.address);
  });

  it('after a stand-down, the next run relays it (15), as session close says, and the run that registers the new session prints the address change AND the mail that follows, in one run', async () => {
    const s = await register(world.bob, world.hub, 'bob-again');
    const close = await as(world.bob, 'bob-again', ['session', 'close']);
    expect(close.code, close.stderr).toBe(0);
    expect(close.stdout).toContain(`forgot ${s.id} locally (${stateDirOf(world.bob, world.hub, 'bob-again')}); ${RELAYS_15}\n`);
    const relayed = await as(world.bob, 'bob-again', ['bridge', '--wait', '0.2']);
    expect(relayed.code, relayed.stderr).toBe(15);
    expect(relayed.stderr).toMatch(/STOOD DOWN \(exit 15, session_closed\)/);

    const run = startBridge(world.bob, 'bob-again', 60);
    const done = collect(run);
    const fresh = await waitFor(
      () => {
        const now = sessionOf(world.bob, world.hub, 'bob-again');
        return now !== null && now.id !== s.id ? now : null;
      },
      { what: 'the new session' },
    );
    const sent = await as(world.alice, null, ['send', '--json', '--to', fresh.address, 'to the new address']);
    expect(sent.code, sent.stderr).toBe(0);
    const r = await done;
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^\\[mail \\d+\\] address changed \\(session_closed\\): ${s.address} → ${fresh.address} `));
    expect(lines[1]).toMatch(/^\[mail \d+\] notify from .*"to the new address"$/);
  });

  it('a pinned session stood down: session close says every run pinned to it exits 15 until the pin changes, and they do', async () => {
    // Registered at the Hub directly: no other entry holds it, so a run pinned to it adopts it.
    const made = await hubCall(world.hub, 'POST', '/v1/sessions', { token: world.bob.token, body: { client_key: 'bob-pinned-key', name: 'bob-pinned' } });
    expect(made.status).toBe(201);
    const id = (made.body.session as { id: string }).id;
    const pinned = ['--session', id];
    const first = await as(world.bob, null, ['bridge', ...pinned, '--wait', '0.2']);
    expect(first.code, first.stderr).toBe(0);
    const dir = stateDirOf(world.bob, world.hub, id);
    await waitFor(() => sessionOf(world.bob, world.hub, id)?.pinned === true, { what: 'the pinned session adopted' });

    const close = await as(world.bob, null, ['session', 'close', ...pinned]);
    expect(close.code, close.stderr).toBe(0);
    expect(close.stdout).toContain(
      `forgot ${id} locally (${dir}); a closed session stays closed, so every oh-hai bridge pinned to ${id} exits 15 until --session / MA2H_SESSION_ID is cleared or repointed\n`,
    );
    // The relay of the recorded stand-down, then a connection that asks the Hub for the closed pin, and again.
    for (const run of ['relays the stand-down', 'asks the Hub', 'asks again']) {
      // A wait long enough for the new connection's answer from the Hub: the run ends on its stop, not on the wait.
      const r = await as(world.bob, null, ['bridge', ...pinned, '--wait', '30']);
      expect(r.code, `${run}: ${r.stderr}`).toBe(15);
      expect(r.stderr, run).toMatch(/STOOD DOWN \(exit 15, session_closed\)/);
    }
    expect(sessionOf(world.bob, world.hub, id), 'no session registered in its place').toBeNull();
  });

  it('mail of the closed session left unread is replayed as possibly bounced, never as fresh mail, and session close says it left it', async () => {
    const s = await register(world.bob, world.hub, 'bob-unread');
    const dir = stateDirOf(world.bob, world.hub, 'bob-unread');
    const sent = await as(world.alice, null, ['send', '--json', '--to', s.address, 'left unread']);
    expect(sent.code, sent.stderr).toBe(0);
    const messageId = (JSON.parse(sent.stdout) as { id: string }).id;
    await waitFor(() => readFileSync(file(dir, 'bridge.ndjson'), 'utf8').includes(messageId), { what: 'the notify in the spool, unread' });

    const close = await as(world.bob, 'bob-unread', ['session', 'close']);
    expect(close.code, close.stderr).toBe(0);
    expect(close.stderr).toContain(
      `oh-hai session close: ⚠️ ${s.id} stood down with unread mail: 1 record that arrived under it was never read and stays in ${file(dir, 'bridge.ndjson')}: the next oh-hai bridge prints it marked POSSIBLY BOUNCED, not as fresh mail`,
    );

    // No reader was waiting: the next run prints what was left, then relays the stand-down.
    const next = await as(world.bob, 'bob-unread', ['bridge', '--wait', '0.2']);
    expect(next.code, next.stderr).toBe(15);
    const line = next.stdout.split('\n').find((l) => l.includes(messageId));
    expect(line).toMatch(
      new RegExp(
        `^\\[mail \\d+\\] POSSIBLY BOUNCED — arrived under ${s.id}, since replaced; .* do not treat it as fresh mail · notify from ${world.alice.address} \\(${messageId}\\)`,
      ),
    );

    // The run after registers a new session, and the address change names the stand-down.
    const seen = await readUntil(world.bob, 'bob-unread', (e) => e.some((x) => x.type === 'transition'), 'the address change after the stand-down');
    expect(seen.find((x) => x.type === 'transition')).toMatchObject({
      event: 'address_changed',
      from_session: s.id,
      from_address: s.address,
      reason: 'session_closed',
    });
    const fresh = await waitFor(() => sessionOf(world.bob, world.hub, 'bob-unread'), { what: 'the new session' });
    expect(fresh.history.map((h) => [h.id, h.reason])).toEqual([[s.id, 'session_closed']]);
  });

  it('--keep-connection stops the connection and leaves the session open; the next bridge adopts it', async () => {
    const s = await register(world.bob, world.hub, 'bob-keep');
    const dir = stateDirOf(world.bob, world.hub, 'bob-keep');
    const pid = consumerPid(dir)!;
    const r = await as(world.bob, 'bob-keep', ['session', 'close', '--keep-connection']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`stopped the background connection (pid ${pid}`);
    expect(r.stdout).toContain(`session ${s.id} stays open`);
    expect((await hubCall(world.hub, 'GET', `/v1/sessions/${s.id}`, { token: world.bob.token })).body.session.state).toBe('active');
    expect((await as(world.bob, 'bob-keep', ['bridge', '--wait', '0.2'])).code).toBe(0);
    await waitFor(() => consumerPid(dir) !== pid && sessionOf(world.bob, world.hub, 'bob-keep')?.id === s.id, { what: 'a new connection on the same session' });
  });

  it('closed with no connection running, session close says the next run registers a new session, and it does', async () => {
    const s = await register(world.bob, world.hub, 'bob-idle');
    const dir = stateDirOf(world.bob, world.hub, 'bob-idle');
    expect((await as(world.bob, 'bob-idle', ['session', 'close', '--keep-connection'])).code).toBe(0);
    const close = await as(world.bob, 'bob-idle', ['session', 'close']);
    expect(close.code, close.stderr).toBe(0);
    expect(close.stdout).toContain(`forgot ${s.id} locally (${dir}); the next oh-hai bridge registers a new session with a new address\n`);
    const next = await as(world.bob, 'bob-idle', ['bridge', '--wait', '0.2']);
    expect(next.code, next.stderr).toBe(0);
    const fresh = await waitFor(() => sessionOf(world.bob, world.hub, 'bob-idle'), { what: 'a new session after the close' });
    expect(fresh.id).not.toBe(s.id);
    expect(fresh.address).not.toBe(s.address);
  });

  it('nothing to stand down is exit 4', async () => {
    const r = await as(world.bob, 'bob-never', ['session', 'close']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /oh-hai session close: FATAL \(exit 4, nothing_to_stand_down\) — nothing to stand down: this agent session \(MA2H_AGENT_SESSION_ID=bob-never\) holds no session/,
    );
    const keep = await as(world.bob, 'bob-never', ['session', 'close', '--keep-connection']);
    expect(keep.code).toBe(4);
  });

  it('status shows the Hub (the authority) and the local record, each labelled with whose clock it is', async () => {
    const s = await register(world.bob, world.hub, 'bob-status');
    const r = await as(world.bob, 'bob-status', ['session', 'status']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`session ${s.id} · ${s.address}`);
    expect(lines[1]).toMatch(/^at the Hub \(the authority; every instant is the Hub's clock\): active · lease 900 s · expires \S+Z · last renewed \S+Z/);
    expect(lines[2]).toMatch(
      new RegExp(
        `^as last seen here \\(renewal age on our clock\\): lease — ${s.id} expires \\S+Z \\(Hub's clock; last renewed \\d+s ago\\); consumer pid \\d+ on \\S+\\.$`,
      ),
    );
    expect(r.stdout).toMatch(/^on this host: reader not attending .* · 0 unread · state entry /m);
    expect(r.stdout).not.toMatch(/remaining|left\b/);
    const json = JSON.parse((await as(world.bob, 'bob-status', ['session', 'status', '--json'])).stdout) as {
      hub: { state: string };
      local: { record: { id: string } };
    };
    expect(json.hub.state).toBe('active');
    expect(json.local.record.id).toBe(s.id);

    expect((await as(world.bob, 'bob-status', ['session', 'close'])).code).toBe(0);
    const after = await as(world.bob, 'bob-status', ['session', 'status']);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(
      /^no session: this agent session \(MA2H_AGENT_SESSION_ID=bob-status\) holds no session.*; the next oh-hai bridge run registers one$/m,
    );
    expect(after.stderr).toBe('');
  });
});

describe('oh-hai session close when the Hub fails the close', () => {
  const world = useParties(['bob'], { faults: true });

  it('the connection stops but does not claim a stand-down; the session stays open and recorded, and a second close finishes it', async () => {
    const s = await register(world.bob, world.hub, 'bob-fault');
    const dir = stateDirOf(world.bob, world.hub, 'bob-fault');
    const pid = consumerPid(dir)!;
    // Both closes fail: the connection's own, then the one session close falls back to.
    await world.hub.faults([{ class: 'sessions', action: 'status', status: 503, count: 2 }]);
    const r = await as(world.bob, 'bob-fault', ['session', 'close']);
    expect(r.code, r.stderr).toBe(13);
    expect(r.stderr).toMatch(
      /FATAL \(exit 13, \S+\) — stopped the background connection .*it stopped cleanly; but .*The session was NOT closed and is still recorded locally: run oh-hai session close again/,
    );
    const record = readRecord(dir, 'consumer.json', parseConsumerRecord);
    expect(record.state === 'ok' && [record.value.pid, record.value.exit_code, record.value.stop_reason]).toEqual([pid, 0, 'signal']);
    expect(record.state === 'ok' && record.value.stop_message).toMatch(new RegExp(`asked to stand ${s.id} down, but closing it at the Hub failed \\(HTTP 503`));
    expect((await hubCall(world.hub, 'GET', `/v1/sessions/${s.id}`, { token: world.bob.token })).body.session.state).toBe('active');
    expect(sessionOf(world.bob, world.hub, 'bob-fault')?.id).toBe(s.id);

    const again = await as(world.bob, 'bob-fault', ['session', 'close']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`closed session ${s.id} (${s.address}) at the Hub at `);
    expect((await hubCall(world.hub, 'GET', `/v1/sessions/${s.id}`, { token: world.bob.token })).body.session.state).toBe('closed');
    expect(sessionOf(world.bob, world.hub, 'bob-fault')).toBeNull();
  });
});
