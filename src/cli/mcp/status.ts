import type { CallToolResult } from '@modelcontextprotocol/server';
import { describePolicy, parsePolicy } from '../../config/index.js';
import { isSameProcessAlive, parseConsumerRecord, readRecord, STATE_FILES } from '../../spool/index.js';
import { plain } from '../../reader/index.js';
import { annotateStateDir, openThisEntry, sessionStatus, statusEpilogue, statusLines, type AgentAccess } from '../messaging/index.js';
import type { McpContext } from './context.js';
import { toolError, toolResult } from './results.js';

/** The policy in force: what the running connection enforces, else what a connection started now would. */
function policyInForce(a: AgentAccess, stateDirPath: string | null): { items: string[] | null; source: 'running connection' | 'configuration'; text: string } {
  const consumer = stateDirPath !== null ? readRecord(stateDirPath, STATE_FILES.consumer, parseConsumerRecord) : null;
  if (consumer?.state === 'ok' && consumer.value.state !== 'stopped' && isSameProcessAlive(consumer.value) !== 'dead') {
    const items = consumer.value.policy;
    const parsed = items === null ? null : parsePolicy(items);
    const text = parsed === null ? describePolicy(null) : parsed.ok ? describePolicy(parsed.value) : items!.join(', ');
    return { items, source: 'running connection', text: `${text} (enforced by the running connection, pid ${consumer.value.pid})` };
  }
  const items = a.settings.bridge.allowFrom;
  return { items, source: 'configuration', text: `${describePolicy(a.settings.bridge.policy)} (configured; a connection started now enforces it)` };
}

/**
 * `oh_hai_status`: this agent session — address, the lease as the epilogue says it (the Hub's
 * instant verbatim, our renewal age), the policy in force, and whether a connection drains it.
 * No session yet is an answer, not an error: the next read or bridge run registers one.
 */
export async function statusResult(ctx: McpContext, a: AgentAccess): Promise<CallToolResult> {
  const ts = a.thisSession;
  const policy = policyInForce(a, ts.stateDirPath);
  const policyLine = `sender policy: ${policy.text}`;
  if (ts.kind === 'none') {
    // "starts the connection" would be false of an entry the next read refuses: that refusal instead, as session status gives it.
    const entry = openThisEntry(ts.stateDirPath);
    if (!entry.ok) return toolError(entry.error);
    const drains =
      ts.stateDirPath !== null
        ? annotateStateDir(ts.stateDirPath, { nowMs: ctx.io.clock.now(), staleMs: ctx.knobs.staleHolderSeconds * 1000, liveness: isSameProcessAlive })
        : null;
    const text = `no session: ${ts.why}. oh_hai_read (or an oh-hai bridge run) starts the connection, which registers one.\n${policyLine}\n`;
    return toolResult(text, { session: null, why: ts.why, policy: { allow_from: policy.items, source: policy.source }, local: drains });
  }
  const now = ctx.io.clock.now();
  const status = await sessionStatus(a, ts, ctx.knobs, now);
  if (!status.ok) return toolError(status.error);
  const { view } = status.value;
  const local = view.local?.annotation ?? null;
  const drains =
    local === null
      ? 'no state entry here: nothing on this host drains it'
      : local.consumer === 'live'
        ? `a background connection drains it (pid ${local.consumer_pid})`
        : local.consumer === 'dead'
          ? `no connection drains it here (${local.consumer_note}); oh_hai_read or oh-hai bridge starts one`
          : `unknown whether a connection drains it (${local.consumer_note}) — do not relaunch on this alone`;
  const lines = [
    `session ${plain(ts.id)} · ${plain(ts.address)}`,
    ...statusLines(view, statusEpilogue(status.value, 'lease as last seen here (renewal age on our clock)', now)),
    `connection: ${drains}`,
    policyLine,
  ];
  return toolResult(lines.join('\n') + '\n', {
    session: { id: ts.id, address: ts.address },
    ...view,
    policy: { allow_from: policy.items, source: policy.source },
    drains: local?.consumer ?? null,
  });
}
