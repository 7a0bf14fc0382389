import { verifyDelivery } from '../../../consumer/index.js';
import { formatAddress, parseAddress, splitDelivery, type Capability, type Entry } from '../../../hub/contract/index.js';
import type { HubClient, HubFailure, HubResult } from '../../../hub/client/index.js';
import type { Clock, Timers } from '../../../util/clock.js';
import type { Step, StepName } from '../report.js';
import { describeFailure, type ClockOffset } from './hub.js';
import { selfTestText } from '../../messaging/self-test-mail.js';

/**
 * The throwaway round trip: register a session of its own, send it an addressed notify,
 * drain it, verify it, ack it, see it online in the fleet, close it — each step timed on
 * our monotonic clock and named, so a failure says which step. It touches no bridge: its
 * session has its own client_key and no name, and it never presents another session.
 */

export type RoundTripClient = Pick<HubClient, 'createSession' | 'send' | 'drain' | 'ack' | 'getMessage' | 'fleet' | 'closeSession'>;

export interface RoundTripDeps {
  client: RoundTripClient;
  agentId: string;
  capability: Capability;
  clock: Timers;
  /** The offset the clock check measured, so a stale `t` names the culprit. */
  clockOffset: ClockOffset | null;
  replayWindowSeconds: number;
  /** How long the drain step waits for the notify to show up. */
  timeoutMs: number;
  clientKey: string;
}

/** Short, so a session a crashed doctor leaves behind lapses soon; the Hub clamps it to its bounds. */
export const THROWAWAY_LEASE_SECONDS = 60;

type Outcome<T> = { ok: true; value: T; detail: string } | { ok: false; detail: string; fix: string };

const passed = <T>(value: T, detail: string): Outcome<T> => ({ ok: true, value, detail });
const failed = (detail: string, fix: string): Outcome<never> => ({ ok: false, detail, fix });

const AGAIN = 'run oh-hai doctor --self-test again; if it fails at the same step, that part of the Hub is unhealthy — tell its operator';

/** A Hub refusal in words, with the fix a person can act on. */
function refusal(step: StepName, f: HubFailure): Outcome<never> {
  const said = describeFailure(f);
  if (f.kind === 'http' && f.code === 'messaging_disabled') {
    return failed(
      `the Hub refused (${said}): agent messaging is switched off for this account, so no session can register and nothing can be sent`,
      "a human must switch on Settings → Agent messaging in the Hub's inbox",
    );
  }
  if (f.kind === 'http' && f.status === 401)
    return failed(`the Hub refused the credential (${said})`, 'see the credential check: a human must issue a new agent token');
  if (f.kind === 'http' && f.code === 'too_many_sessions') {
    return failed(
      `the Hub refused (${said})`,
      'this agent already holds the most live sessions the Hub allows: stand down the ones no run uses (oh-hai fleet ls, oh-hai session close)',
    );
  }
  if (f.kind === 'network') return failed(`the ${step} request did not complete: ${said}`, `${AGAIN} (OH_HAI_DOCTOR_TIMEOUT_SECONDS bounds each request)`);
  return failed(`the Hub answered ${said}`, AGAIN);
}

const unwrap = <T>(step: StepName, r: HubResult<T>): { ok: true; value: T } | Outcome<never> =>
  r.ok ? { ok: true, value: r.value } : refusal(step, r.failure);

const fieldOf = (x: unknown, key: string): unknown => (typeof x === 'object' && x !== null ? Reflect.get(x, key) : undefined);

/** A delivery of `kind` about our message, recognised by its message id (the notify itself is verified in its own step). */
function carries(raw: unknown, kind: 'message' | 'receipt', messageId: string): boolean {
  const d = splitDelivery(raw);
  return d.ok && fieldOf(d.value.entry, 'kind') === kind && fieldOf(d.value.entry, 'message_id') === messageId;
}

const entryIdOf = (raw: unknown): string | null => {
  const id = fieldOf(fieldOf(raw, 'entry'), 'id');
  return typeof id === 'string' ? id : null;
};

/**
 * Drain the throwaway session until a delivery matches, within the timeout. The session drain
 * sends no ?wait= (MA2H §4), so this re-drains on a short interval derived from the timeout.
 */
async function drainUntil(
  d: RoundTripDeps,
  sessionId: string,
  step: StepName,
  match: (raw: unknown) => boolean,
): Promise<{ ok: true; value: { hit: unknown; others: number; drains: number } } | Outcome<never>> {
  const deadline = d.clock.monotonic() + d.timeoutMs;
  let drains = 0;
  for (;;) {
    const r = unwrap(step, await d.client.drain({ session: sessionId }));
    if (!r.ok) return r;
    drains += 1;
    const hit = r.value.messages.find(match);
    if (hit !== undefined) return { ok: true, value: { hit, others: r.value.messages.length - 1, drains } };
    if (d.clock.monotonic() >= deadline) {
      return failed(`nothing arrived in ${drains} drains over ${d.timeoutMs / 1000} s`, `${AGAIN} (OH_HAI_DOCTOR_TIMEOUT_SECONDS sets how long a step waits)`);
    }
    await d.clock.sleep(Math.max(20, d.timeoutMs / 40));
  }
}

/**
 * After a failure between send and ack, acknowledge what is ours (the notify, then the
 * receipt that acknowledging it produces) before closing: closing would bounce the notify,
 * and the bounce receipt would go to the agent's principal mailbox, where a real bridge
 * prints it. Best effort: true when nothing of ours is left pending.
 */
async function settle(d: RoundTripDeps, sessionId: string, messageId: string): Promise<boolean> {
  for (let round = 0; round < 3; round += 1) {
    const r = await d.client.drain({ session: sessionId });
    if (!r.ok) return false;
    const ours = r.value.messages
      .filter((m) => carries(m, 'message', messageId) || carries(m, 'receipt', messageId))
      .map(entryIdOf)
      .filter((id): id is string => id !== null);
    if (ours.length === 0) return true;
    const a = await d.client.ack({ session: sessionId, delivered: ours, acknowledged: ours });
    if (!a.ok) return false;
  }
  return false;
}

class StepRunner {
  readonly steps: Step[] = [];
  private stopped = false;

  constructor(private readonly clock: Clock) {}

  /** Runs a step unless an earlier one failed (`always` runs anyway: the close after a failure). */
  async run<T>(name: StepName, body: () => Promise<Outcome<T>>, always = false): Promise<T | null> {
    if (this.stopped && !always) {
      this.steps.push({ name, status: 'skip', ms: null, detail: 'not run: an earlier step failed' });
      return null;
    }
    const start = this.clock.monotonic();
    const out = await body();
    const ms = this.clock.monotonic() - start;
    if (out.ok) {
      this.steps.push({ name, status: 'pass', ms, detail: out.detail });
      return out.value;
    }
    this.stopped = true;
    this.steps.push({ name, status: 'fail', ms, detail: out.detail, fix: out.fix });
    return null;
  }

  skip(name: StepName, why: string): void {
    this.steps.push({ name, status: 'skip', ms: null, detail: why });
  }
}

export async function roundTrip(d: RoundTripDeps): Promise<{ session: string | null; steps: Step[] }> {
  const steps = new StepRunner(d.clock);
  const nonce = d.clientKey.slice(d.clientKey.lastIndexOf('-') + 1);
  const text = selfTestText(nonce);

  const session = await steps.run('register', async () => {
    const r = unwrap('register', await d.client.createSession({ client_key: d.clientKey, lease_seconds: THROWAWAY_LEASE_SECONDS }));
    if (!r.ok) return r;
    const s = r.value;
    if (s.state !== 'active') return failed(`the Hub registered ${s.id} but reports it ${s.state}`, AGAIN);
    return passed(s, `registered ${s.id} (${s.address}), lease ${s.lease_seconds} s`);
  });

  const sent = await steps.run('send', async () => {
    const r = unwrap('send', await d.client.send({ to: session!.address, intent: 'notify', text, session: session!.id }));
    if (!r.ok) return r;
    const m = r.value.message;
    const snapshot = m.destination ? `; destination snapshot ${m.destination.snapshot}` : '';
    return passed(m, `sent an addressed notify to it as ${m.id}: ${m.state}${snapshot}`);
  });

  const delivery = await steps.run('drain', async () => {
    const r = await drainUntil(d, session!.id, 'drain', (m) => carries(m, 'message', sent!.id));
    if (!r.ok) return { ...r, detail: `the notify ${sent!.id}: ${r.detail}` };
    const { hit, others, drains } = r.value;
    const claimed =
      others > 0
        ? `; ${others} other ${others === 1 ? 'entry' : 'entries'} came with it (principal-addressed mail this session claimed — left unacknowledged, released when it closes)`
        : '';
    return passed(hit, `drained it after ${drains} drain${drains === 1 ? '' : 's'}${claimed}`);
  });

  const entry = await steps.run('verify', async () => {
    const v = verifyDelivery(delivery, {
      agentId: d.agentId,
      leg: { leg: 'session', sessionId: session!.id },
      replayWindowSeconds: d.replayWindowSeconds,
      signatureAlgs: d.capability.signature_algs,
      nowMs: d.clock.now(),
      clock: d.clockOffset,
      seen: () => false,
      admit: () => ({ admit: true }),
    });
    if (v.verdict === 'reject') {
      const fix =
        v.check === 'replay_window'
          ? "see the clock check: set this machine's clock (NTP) or have the Hub's fixed"
          : 'stop and tell a human: the Hub delivered an entry that fails verification (possible tampering)';
      return failed(v.message, fix);
    }
    const e: Entry = v.entry;
    const from = parseAddress(e.from, 'from');
    const wrong =
      e.kind !== 'message'
        ? `it is a ${e.kind}, not a message`
        : e.intent !== 'notify'
          ? `its intent is ${e.intent}, not notify`
          : e.text !== text
            ? 'its text differs from what was sent'
            : !from.ok || from.value.agentId !== d.agentId
              ? `its sender ${e.from} is not ${formatAddress(d.agentId)}`
              : null;
    if (wrong !== null)
      return failed(`the entry ${e.id} carrying ${sent!.id} passed verification, but ${wrong}`, 'stop and tell a human: the Hub altered the entry');
    return passed(e, `entry ${e.id} is well-formed, inside the ${d.replayWindowSeconds} s replay window, addressed to this session, from ${e.from}`);
  });

  const acked = await steps.run('ack', async () => {
    const r = unwrap('ack', await d.client.ack({ session: session!.id, delivered: [entry!.id], acknowledged: [entry!.id] }));
    if (!r.ok) return r;
    if (r.value.unknown.includes(entry!.id)) return failed(`the Hub does not know the entry ${entry!.id} it just delivered`, AGAIN);
    const m = unwrap('ack', await d.client.getMessage(sent!.id));
    if (!m.ok) return m;
    const track = m.value.track.map((t) => t.state).join(' → ');
    if (m.value.state !== 'acknowledged') return failed(`acked, but the Hub's delivery track for ${sent!.id} reads ${track || m.value.state}`, AGAIN);
    // The sender (this same session) is owed a receipt; acknowledge it here, or closing the
    // session would leave it to the agent's principal mailbox, where a real bridge prints it.
    const receipt = await drainUntil(d, session!.id, 'ack', (raw) => carries(raw, 'receipt', sent!.id));
    if (!receipt.ok) return { ...receipt, detail: `acked, but the sender's receipt for ${sent!.id}: ${receipt.detail}` };
    const receiptId = entryIdOf(receipt.value.hit);
    if (receiptId === null) return failed(`the receipt for ${sent!.id} carries no entry id`, AGAIN);
    const acked = unwrap('ack', await d.client.ack({ session: session!.id, acknowledged: [receiptId] }));
    if (!acked.ok) return acked;
    return passed(true, `acked delivered + acknowledged; the delivery track reads ${track}, and the sender's receipt arrived (acknowledged too)`);
  });

  await steps.run('reachability', async () => {
    const r = unwrap('reachability', await d.client.fleet());
    if (!r.ok) return r;
    const row = r.value.find((s) => s.session_id === session!.id);
    if (!row) return failed(`GET /v1/fleet does not list ${session!.id}`, AGAIN);
    if (row.reachability !== 'online') {
      return failed(
        `GET /v1/fleet lists ${session!.id} as ${row.reachability} right after a drain: peers would see this agent's sessions as not reachable`,
        AGAIN,
      );
    }
    return passed(null, `GET /v1/fleet lists ${session!.id} online`);
  });

  if (session === null) steps.skip('close', 'nothing to close: no session was registered');
  else {
    await steps.run(
      'close',
      async () => {
        let settled = '';
        if (sent !== null && acked === null) {
          settled = (await settle(d, session.id, sent.id))
            ? "; first acknowledged what the failed step left, so no bounce receipt reaches this agent's mailbox"
            : `; could not acknowledge ${sent.id} first, so a bounce receipt for it may reach this agent's principal mailbox`;
        }
        const r = unwrap('close', await d.client.closeSession(session.id));
        if (!r.ok)
          return {
            ...r,
            detail: r.detail + settled,
            fix: `nothing to clean up by hand: ${session.id} lapses on its own within its ${session.lease_seconds} s lease`,
          };
        if (r.value.state !== 'closed') return failed(`closing ${session.id} left it ${r.value.state}${settled}`, AGAIN);
        return passed(null, `closed ${session.id}${settled}`);
      },
      true,
    );
  }
  return { session: session?.id ?? null, steps: steps.steps };
}
