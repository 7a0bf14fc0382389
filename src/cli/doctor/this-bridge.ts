import type { HubClient } from '../../hub/client/index.js';
import { hostName, isSameProcessAlive, sessionStateDir, stateKey } from '../../spool/index.js';
import type { CliIO } from '../io.js';
import { processInspector, resolveAgentSessionKey, type AgentSessionKey } from '../resolve/index.js';
import { stateDirPresence, readBridgeFacts } from './checks/bridge-read.js';
import { judgeBridge, type Bound, type HubSession } from './checks/bridge.js';
import type { DoctorKnobs } from './doctor.js';
import { check, type Check } from './report.js';

/**
 * THIS agent session's bridge (or the one --session / --state-home names), located by the
 * bridge's own rule — Hub origin, agent id, agent-session key — and judged read-only. The
 * entry is never opened (opening repairs modes); nothing is sent into its session.
 */

export interface BridgeTarget {
  stateRoot: string;
  hubUrl: string;
  agentId: string;
  /** --session, when given. */
  session: string | undefined;
}

export interface BridgeInputs {
  io: Pick<CliIO, 'env' | 'clock' | 'pid'>;
  knobs: DoctorKnobs;
  /** For GET /v1/sessions/:id (read-only, renews nothing); null with the reason it is missing. */
  hub: { client: Pick<HubClient, 'getSession'> } | { client: null; why: string };
  /** The unattended bound configuration gives, for when the entry's settings.json cannot be read. */
  configured: Bound;
}

export type Located = { ok: true; dir: string; key: AgentSessionKey } | { ok: false; reason: string };

export function locateBridge(target: BridgeTarget, io: Pick<CliIO, 'env' | 'pid'>): Located {
  const key = resolveAgentSessionKey({ flag: target.session, env: io.env, host: hostName(), selfPid: io.pid, inspect: processInspector });
  if (!key.ok) return { ok: false, reason: key.reason };
  return { ok: true, key: key.value, dir: sessionStateDir(target.stateRoot, stateKey(target.hubUrl, target.agentId, key.value.key)) };
}

export async function checkBridge(located: { dir: string; key: AgentSessionKey }, inputs: BridgeInputs): Promise<Check[]> {
  const { dir, key } = located;
  const presence = stateDirPresence(dir);
  const where = { entry: dir, agent_session: key.describe };
  if (presence.state === 'absent') {
    return [check('bridge', 'pass', `no bridge for this agent session (${key.describe}; no state entry at ${dir})`, { measured: where })];
  }
  if (presence.state === 'unreadable') {
    return [
      check('bridge', 'warn', `${presence.reason}: this agent session's bridge (${key.describe}) cannot be inspected`, {
        fix: `look at ${dir} by hand before relaunching anything`,
        measured: where,
      }),
    ];
  }
  const facts = readBridgeFacts(dir, key.pinned);
  let hub: HubSession;
  if (facts.session.state !== 'ok') hub = { asked: false, why: 'no session record to ask about' };
  else if (inputs.hub.client === null) hub = { asked: false, why: inputs.hub.why };
  else hub = { asked: true, result: await inputs.hub.client.getSession(facts.spooled?.id ?? facts.session.value.id) };
  const probe = { nowMs: inputs.io.clock.now(), staleMs: inputs.knobs.staleMs, liveness: isSameProcessAlive };
  return judgeBridge(facts, hub, inputs.configured, probe);
}
