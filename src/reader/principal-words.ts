import { formatDuration } from '../util/duration.js';
import type { HolderFacts } from './holder.js';
import type { ConsumerView } from './epilogue.js';
import { retryState } from './consumer-watch.js';

export const NAME = 'oh-hai inbox watch';

const NO_LEASE = (address: string) =>
  `This mailbox (${address}) is addressed by agent id and has no session lease to lapse: stopping that watcher costs delivery, not the address.`;

/** Exit 10 for a second watcher: names the holder, or says its record could not be read — never "pid unknown". */
export function watcherRefusal(f: HolderFacts, address: string, readerPath: string): string {
  const rule = 'One watcher per identity per machine.';
  if (f.record.state === 'ok') {
    const h = f.record.value;
    return (
      `another watcher already drains this agent's principal mailbox on this machine: pid ${h.pid} on ${h.host}, holding for ` +
      `${formatDuration(f.nowMs - h.started_at)}, heartbeat ${formatDuration(f.nowMs - h.heartbeat_at)} ago. ${rule} ${NO_LEASE(address)} ` +
      `Read its output instead of starting another; do not kill it to make this one run.`
    );
  }
  const reason = f.record.state === 'unreadable' ? f.record.reason : 'no record';
  const written = f.writtenAt !== null ? `, last written ${formatDuration(f.nowMs - f.writtenAt)} ago` : '';
  return (
    `another watcher's record exists and could not be read (${reason}${written}), so its holder cannot be named from here — it may be live. ` +
    `${rule} ${NO_LEASE(address)} If you are certain no other watcher runs, remove ${readerPath}.`
  );
}

/** No session close stops the principal leg's connection: SIGTERM is its clean stop (it finishes what it holds, acknowledges nothing unprinted). */
const CLEAN_STOP = 'SIGTERM is its clean stop: nothing is lost';

export const stopLine = (pid: number): string => `stop it with \`kill ${pid}\` (${CLEAN_STOP})`;

export const noPolicyLine = (address: string): string =>
  `no sender policy is declared: directives, notifies, responses and receipts are delivered, but every ask/task addressed to ${address} is refused and left unacked ` +
  `(the Hub keeps redelivering it). To accept them, pass --allow-from any-in-account / agent:<id> or set [bridge] allow_from, then stop this connection ` +
  `(it enforces what it started with; kill the consumer pid the last line names — ${CLEAN_STOP}) and run ${NAME} again.`;

/**
 * The bridge's epilogue minus the lease: the principal mailbox has no session to lapse, so
 * what stops when nothing drains it is delivery, not the address.
 */
export function watchEpilogue(view: ConsumerView, address: string, nowMs: number): string[] {
  const nobody = `nothing drains ${address} from this machine: directives and mail to it wait at the Hub, undelivered, until a watcher or a live session of this agent drains them`;
  const { record: consumer, alive, started } = view;
  if (started) {
    // The connection this run started has not recorded itself yet; the record is its predecessor's.
    const who = `consumer pid ${started.pid} on ${started.host}`;
    if (started.alive === 'dead') return [`${NAME}: ${who} (not running).`, `${NAME}: ⚠️ ${nobody}. What to do: run ${NAME} again.`];
    return [`${NAME}: ${who} (started by this run; not recorded yet) drains ${address}.`];
  }
  if (consumer.state === 'absent')
    return [`${NAME}: no background connection has recorded itself here.`, `${NAME}: ⚠️ ${nobody}. What to do: run ${NAME} again.`];
  if (consumer.state === 'unreadable') {
    return [
      `${NAME}: could not read the background connection's record (${consumer.reason}).`,
      `${NAME}: ⚠️ whether anything drains ${address} is unknown from here; do not start a second watcher on this alone — read bridge.log in the entry first.`,
    ];
  }
  const c = consumer.value;
  const who = `consumer pid ${c.pid} on ${c.host}`;
  if (c.state === 'stopped') {
    return [
      `${NAME}: ${who} (stopped: exit ${c.exit_code ?? '?'}, ${c.stop_reason ?? 'no reason recorded'}).`,
      `${NAME}: ⚠️ ${nobody}. What to do: follow the stop line above, then run ${NAME} again.`,
    ];
  }
  if (alive === 'dead') return [`${NAME}: ${who} (not running).`, `${NAME}: ⚠️ ${nobody}. What to do: run ${NAME} again.`];
  const drains = `${NAME}: ${who}${alive === 'unknown' ? ' (liveness unknown from this host)' : ''} drains ${address}.`;
  if (!c.retrying) return [drains];
  return [
    drains,
    `${NAME}: ⚠️ the background connection (pid ${c.pid}) cannot reach the Hub and is retrying: ${retryState(c.retrying, nowMs)}. ` +
      `Nothing is delivered meanwhile; if all ${c.retrying.of} attempts fail the connection stops with exit 13. What to do: run ${NAME} again — it waits while the connection retries, and nothing is lost.`,
  ];
}
