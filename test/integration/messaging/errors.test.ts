import { describe, expect, it } from 'vitest';
import { ensureDir } from '../../../src/util/fs-durable.js';
import { writeRecord, type SessionRecord } from '../../../src/spool/index.js';
import { hubCall } from '../../helpers/hub.js';
import { as, stateDirOf, useParties, type Party } from './world.js';

/** Every refusal of the sending side, each with its exit code and a message naming the fix. */
const world = useParties(['alice', 'bob'], { faults: true });

/** A session of `p` made straight at the Hub (no bridge), then closed: an address that takes no more mail. */
async function closedSession(p: Party, key: string, by: 'agent' | 'operator' = 'agent'): Promise<string> {
  const made = await hubCall(world.hub, 'POST', '/v1/sessions', { token: p.token, body: { client_key: key } });
  expect(made.status).toBe(201);
  const id = made.body.session.id as string;
  const close =
    by === 'agent'
      ? await hubCall(world.hub, 'POST', `/v1/sessions/${id}/close`, { token: p.token, body: {} })
      : await hubCall(world.hub, 'POST', `/v1/sessions/${id}/operator-close`, { token: world.hub.humanToken, body: {} });
  expect(close.status).toBe(200);
  return id;
}

/** A session.json naming `id` in this agent session's state entry, as a bridge would have left it. */
function recordSession(p: Party, key: string, id: string): void {
  const dir = stateDirOf(p, world.hub, key);
  ensureDir(dir);
  const record: SessionRecord = {
    id,
    address: `${p.address}#${id}`,
    name: key,
    pinned: false,
    lease_seconds: 900,
    expires_at: '2026-01-01T00:00:00.000Z',
    renewed_at: Date.now(),
    history: [],
  };
  writeRecord(dir, 'session.json', record);
}

describe('sending: refusals and transient failures', () => {
  it('usage errors are exit 2 and say what to pass', async () => {
    const noTo = await as(world.alice, null, ['send', 'hello']);
    expect(noTo.code).toBe(2);
    expect(noTo.stderr).toMatch(
      /oh-hai send: FATAL \(exit 2, usage\) — oh-hai send needs --to <agent>: an agent's label \(reviewer\), agent:<id> .* or agent:<id>#sess_…/,
    );
    const badTo = await as(world.alice, null, ['ask', '--to', 'bob#not-a-session', 'hello']);
    expect(badTo.code).toBe(2);
    expect(badTo.stderr).toMatch(
      /FATAL \(exit 2, bad_address\) — --to "bob#not-a-session": after '#' comes a session id .*; give an agent label \(reviewer\), or an address agent:<id>/,
    );
    const empty = await as(world.alice, null, ['task', '--to', world.bob.address, '-'], { input: '' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/stdin was empty; pipe the text in, or give it as the last argument/);
    const badWait = await as(world.alice, null, ['ask', '--wait', 'soon', '--to', world.bob.address, 'q']);
    expect(badWait.code).toBe(2);
    expect(badWait.stderr).toMatch(/--wait "soon" is not a positive number of seconds/);
  });

  it('an unknown recipient or a session that has ended is exit 4, with where to find a live address', async () => {
    const nobody = await as(world.alice, null, ['send', '--to', 'agent:agt_nobody', 'hello']);
    expect(nobody.code).toBe(4);
    expect(nobody.stderr).toMatch(/FATAL \(exit 4, recipient_not_found\) — there is no such recipient in this account: agent:agt_nobody .*`oh-hai fleet ls`/);
    const bogus = await as(world.alice, null, ['send', '--to', `${world.bob.address}#sess_bogus`, 'hello']);
    expect(bogus.code).toBe(4);
    const closed = await closedSession(world.bob, 'bob-closed');
    const ended = await as(world.alice, null, ['ask', '--to', `${world.bob.address}#${closed}`, 'still there?']);
    expect(ended.code).toBe(4);
    expect(ended.stderr).toMatch(new RegExp(`FATAL \\(exit 4, session_closed\\) — ${world.bob.address}#${closed} is closed: that run's session has ended`));
  });

  it('a dead credential is exit 3 and says a human must fix it', async () => {
    const r = await as(world.alice, null, ['send', '--to', world.bob.address, 'hello'], { env: { OH_HAI_TOKEN: 'ohh_a_not_a_real_token' } });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/FATAL \(exit 3, unauthorized\) — the Hub refused the credential from OH_HAI_TOKEN .* a human must fix the credential/);
    expect(r.stderr).not.toContain('ohh_a_not_a_real_token');
  });

  it('a send that keeps failing with 5xx is retried with one key, then exit 13; one that recovers queues exactly one copy', async () => {
    await world.hub.faults([{ class: 'messages', action: 'status', status: 503, count: 2 }]);
    const r = await as(world.alice, null, ['send', '--json', '--to', world.bob.address, 'survives two 503s']);
    expect(r.code).toBe(0);
    expect(r.stderr.match(/attempt \d failed \(503 unavailable\); retrying in/g)).toHaveLength(2);
    const list = await as(world.alice, null, ['messages', 'list', '--json']);
    expect((JSON.parse(list.stdout) as { text: string }[]).filter((m) => m.text === 'survives two 503s')).toHaveLength(1);
    // Nothing drains bob's mailbox here: the track stays at queued, the Hub's instant verbatim.
    const id = (JSON.parse(r.stdout) as { id: string; track: { at: string }[] }).id;
    const lines = await as(world.alice, null, ['messages', 'list']);
    expect(lines.stdout).toMatch(new RegExp(`^${id} · notify → ${world.bob.address} · queued · queued \\S+Z · "survives two 503s"$`, 'm'));

    await world.hub.faults([{ class: 'messages', action: 'status', status: 503 }]);
    const down = await as(world.alice, null, ['send', '--to', world.bob.address, 'never queued']);
    await world.hub.faults([]);
    expect(down.code).toBe(13);
    expect(down.stderr.match(/retrying in/g)).toHaveLength(3);
    expect(down.stderr).toMatch(/FATAL \(exit 13, unavailable\) — the Hub at \S+ kept failing while oh-hai send to agent:\S+ \(503 unavailable/);
  });

  it('a recorded session of this agent session that has ended is not attached: the send goes to the principal mailbox and says so', async () => {
    const closed = await closedSession(world.alice, 'alice-stale');
    recordSession(world.alice, 'alice-stale', closed);
    const r = await as(world.alice, 'alice-stale', ['ask', '--to', world.bob.address, 'who answers this?']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      `this agent session's recorded session ${closed} is no longer live at the Hub (410 session_closed); going without it — the next \`oh-hai bridge\` run registers a new one`,
    );
    expect(r.stdout).toContain(`replies and receipts go to your principal mailbox ${world.alice.address}, because`);
    const id = /^queued: ask (msg_\S+)/m.exec(r.stdout)![1]!;
    const shown = await as(world.alice, null, ['messages', 'show', '--json', id]);
    expect((JSON.parse(shown.stdout) as { from: string }).from).toBe(world.alice.address);
  });

  it('a session a human closed (the kill-switch) is not promised a replacement: the send says not to start one', async () => {
    const stopped = await closedSession(world.alice, 'alice-killed', 'operator');
    recordSession(world.alice, 'alice-killed', stopped);
    const r = await as(world.alice, 'alice-killed', ['send', '--to', world.bob.address, 'after the kill-switch']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      new RegExp(
        `recorded session ${stopped} is no longer live at the Hub \\(\\d+ session_closed_by_operator\\); going without it — a human closed it \\(the operator kill-switch\\): do not start a replacement session`,
      ),
    );
    expect(r.stderr).not.toContain('registers a new one');
  });

  it('messaging switched off is exit 3 naming the setting; messages show of an unknown id is exit 4', async () => {
    const off = await hubCall(world.hub, 'PATCH', '/v1/account', { token: world.hub.humanToken, body: { agent_messaging: false } });
    expect(off.status).toBe(200);
    try {
      const r = await as(world.alice, null, ['send', '--to', world.bob.address, 'hello']);
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/FATAL \(exit 3, messaging_disabled\) — agent messaging is switched off for this account .*Settings → Agent messaging/);
    } finally {
      await hubCall(world.hub, 'PATCH', '/v1/account', { token: world.hub.humanToken, body: { agent_messaging: true } });
    }
    const missing = await as(world.alice, null, ['messages', 'show', 'msg_missing']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/FATAL \(exit 4, message_not_found\) — no message "msg_missing" that this agent sent or received/);
  });
});
