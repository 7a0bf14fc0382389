import { randomBytes } from 'node:crypto';
import { credentialsPath, resolveAgentCredential, type AgentCredential, type ResolvedSettings } from '../../config/index.js';
import { type Coded, CONNECTION_KNOBS, readKnobs } from '../../core/index.js';
import { replayWindowSeconds, type Capability } from '../../hub/contract/index.js';
import { HubClient } from '../../hub/client/index.js';
import type { CliIO } from '../io.js';
import { configCheck, policyCheck } from './checks/config.js';
import type { Bound } from './checks/bridge.js';
import {
  capabilityCheck,
  clockCheck,
  credentialCheck,
  describeFailure,
  hubCheck,
  measureOffset,
  type CapabilityProbe,
  type ClockOffset,
} from './checks/hub.js';
import { mcpCheck } from './checks/mcp.js';
import { nodeCheck } from './checks/node.js';
import { roundTrip } from './checks/round-trip.js';
import { stateRootCheck } from './checks/state-root.js';
import { buildReport, check, skipped, STEP_NAMES, type Check, type DoctorReport, type Step } from './report.js';
import { checkBridge, locateBridge } from './this-bridge.js';

/**
 * The order doctor works in: this machine (Node, config, state root, policy), then the Hub
 * (reachable, capability, clock, credential), then with --self-test the round trip and this
 * agent session's bridge. A check that cannot run because an earlier one failed is `skip`,
 * so exactly one line carries each failure.
 */

/**
 * Doctor's intervals. The stale bound and the replay-window override are the consumer's own
 * knobs: doctor must judge a heartbeat and a `t` exactly as the connection does.
 */
export interface DoctorKnobs {
  /** Each Hub request's timeout, and how long the drain step waits for the notify. */
  timeoutMs: number;
  /** A heartbeat older than this is not attendance. */
  staleMs: number;
  replayWindowSeconds: number | null;
}

export function readDoctorKnobs(env: NodeJS.ProcessEnv): Coded<DoctorKnobs> {
  const k = readKnobs(env, [...CONNECTION_KNOBS, 'doctorTimeoutSeconds']);
  if (!k.ok) return k;
  return {
    ok: true,
    value: { timeoutMs: k.value.doctorTimeoutSeconds * 1000, staleMs: k.value.staleHolderSeconds * 1000, replayWindowSeconds: k.value.replayWindowSeconds },
  };
}

export interface DoctorRequest {
  io: Pick<CliIO, 'env' | 'cwd' | 'clock' | 'pid' | 'self'>;
  knobs: DoctorKnobs;
  stateRoot: string;
  nodeVersion: string;
  uid: number | null;
  hub?: string;
  agent?: string;
  session?: string;
  selfTest: boolean;
}

// No 'flag' row: no command takes a flag for the bound (src/core/knobs.ts), and the sources' type says so.
const BOUND_SOURCE: Record<ResolvedSettings['sources']['unattendedMaxSeconds'], string> = {
  env: 'OH_HAI_UNATTENDED_MAX_SECONDS',
  user: '[bridge] unattended_max_seconds in the user config',
  default: 'the default',
};

const configuredBound = (s: ResolvedSettings): Bound => ({ seconds: s.bridge.unattendedMaxSeconds, source: BOUND_SOURCE[s.sources.unattendedMaxSeconds] });

async function probeCapability(client: HubClient, clock: DoctorRequest['io']['clock']): Promise<CapabilityProbe> {
  const beforeMs = clock.now();
  const start = clock.monotonic();
  const result = await client.capability();
  return { result, tookMs: clock.monotonic() - start, beforeMs, afterMs: clock.now() };
}

function replayWindow(knobs: DoctorKnobs, cap: Capability): { seconds: number; source: string } {
  if (knobs.replayWindowSeconds !== null) return { seconds: knobs.replayWindowSeconds, source: 'OH_HAI_REPLAY_WINDOW_SECONDS' };
  if (cap.replay_window_seconds !== null) return { seconds: cap.replay_window_seconds, source: "the Hub's capability" };
  return { seconds: replayWindowSeconds(cap), source: 'the default for a Hub that advertises none' };
}

const skippedSteps = (why: string): Step[] => STEP_NAMES.map((name) => ({ name, status: 'skip', ms: null, detail: `not run: ${why}` }));

const newClientKey = (): string => `doctor-self-test-${randomBytes(6).toString('hex')}`;

/** What the Hub section established, for the self-test and the bridge checks. */
interface HubFindings {
  checks: Check[];
  capability: Capability | null;
  offset: ClockOffset | null;
  window: number;
  agentId: string | null;
  /** The Hub answered and accepted the credential: it can be asked about the bridge's session. */
  answering: boolean;
  /** Why a self-test cannot run, or null when it can. */
  blocked: string | null;
}

async function hubSection(
  req: DoctorRequest,
  settings: ResolvedSettings,
  hubUrl: string,
  client: HubClient,
  credential: Coded<AgentCredential>,
): Promise<HubFindings> {
  const probe = await probeCapability(client, req.io.clock);
  const hub = hubCheck(hubUrl, probe);
  const capability = capabilityCheck(probe, settings.bridge.transport);
  const cap = probe.result.ok ? probe.result.value : null;
  const window = cap ? replayWindow(req.knobs, cap) : null;
  const offset = measureOffset(probe);
  const clock = cap && window ? clockCheck(offset, window.seconds, window.source) : skipped('clock', 'the Hub did not answer with a capability document');
  const who = hub.status === 'pass' && credential.ok ? await client.whoami() : null;
  const cred = credentialCheck(credential, who, { hubUrl, credentialsFile: credentialsPath(req.io.env) });
  const failedFirst = [hub, capability, cred.check].find((c) => c.status === 'fail' || (c.name === 'credential' && c.status !== 'pass'));
  return {
    checks: [hub, capability, clock, cred.check],
    capability: cap,
    offset,
    window: window?.seconds ?? 0,
    agentId: cred.agentId,
    answering: hub.status === 'pass' && cred.check.status === 'pass',
    blocked: failedFirst ? `the ${failedFirst.name} check did not pass` : null,
  };
}

export async function diagnose(req: DoctorRequest): Promise<DoctorReport> {
  const checks: Check[] = [nodeCheck(req.nodeVersion)];
  const config = configCheck(req.io, { hub: req.hub });
  checks.push(config.check, stateRootCheck(req.stateRoot, req.uid), await mcpCheck(req.io, req.knobs.timeoutMs));
  const settings = config.settings;
  const clientKey = newClientKey();
  const selfTest = (steps: Step[], session: string | null = null) => ({ client_key: clientKey, session, steps });
  if (settings === null) {
    checks.push(...['policy', 'hub', 'capability', 'clock', 'credential'].map((n) => skipped(n, 'the config check failed')));
    if (!req.selfTest) return buildReport(checks);
    return buildReport([...checks, skipped('bridge', 'the config check failed')], selfTest(skippedSteps('the config check failed')));
  }
  checks.push(policyCheck(settings, req.io.env));
  const hubUrl = settings.hubUrl;
  if (hubUrl === null) {
    checks.push(
      check('hub', 'fail', 'no Hub URL is configured', {
        fix: 'pass --hub <url>, export MA2H_HUB_URL=<url>, or run oh-hai setup --hub <url> to write [hub] url into your user config',
      }),
      ...['capability', 'clock', 'credential'].map((n) => skipped(n, 'no Hub URL')),
    );
    if (!req.selfTest) return buildReport(checks);
    return buildReport([...checks, skipped('bridge', 'no Hub URL')], selfTest(skippedSteps('no Hub URL')));
  }

  const credential = resolveAgentCredential({ env: req.io.env, hubUrl, agent: req.agent, stateRoot: req.stateRoot });
  const client = new HubClient({ baseUrl: hubUrl, token: credential.ok ? credential.value.token : null, requestTimeoutMs: req.knobs.timeoutMs });
  try {
    const found = await hubSection(req, settings, hubUrl, client, credential);
    checks.push(...found.checks);
    if (!req.selfTest) return buildReport(checks);

    let trip: { session: string | null; steps: Step[] };
    if (found.blocked !== null || found.capability === null || found.agentId === null)
      trip = { session: null, steps: skippedSteps(found.blocked ?? 'the Hub checks did not pass') };
    else {
      trip = await roundTrip({
        client,
        agentId: found.agentId,
        capability: found.capability,
        clock: req.io.clock,
        clockOffset: found.offset,
        replayWindowSeconds: found.window,
        timeoutMs: req.knobs.timeoutMs,
        clientKey,
      });
    }

    if (found.agentId === null) checks.push(skipped('bridge', "this agent's id is unknown (see the credential check)"));
    else {
      const located = locateBridge({ stateRoot: req.stateRoot, hubUrl, agentId: found.agentId, session: req.session }, req.io);
      if (!located.ok) {
        checks.push(
          check('bridge', 'warn', `cannot tell which agent session this is: ${located.reason}`, {
            fix: 'name it with --session <name> (the same one the bridge runs with)',
          }),
        );
      } else {
        const hub = found.answering ? { client } : { client: null, why: 'the hub or the credential check did not pass' };
        checks.push(...(await checkBridge(located, { io: req.io, knobs: req.knobs, hub, configured: configuredBound(settings) })));
      }
    }
    return buildReport(checks, selfTest(trip.steps, trip.session));
  } finally {
    await client.close();
  }
}

/** Why `oh-hai bridge status` could not even find the bridge: nothing was judged. */
export type BridgeDiagnosis = { ok: true; report: DoctorReport } | { ok: false; reason: string; fix: string };

/** The four bridge checks alone (the retired `oh-hai bridge status` forwards here). */
export async function diagnoseBridge(req: Omit<DoctorRequest, 'selfTest' | 'nodeVersion' | 'uid'>): Promise<BridgeDiagnosis> {
  const config = configCheck(req.io, { hub: req.hub });
  const settings = config.settings;
  if (settings === null) return { ok: false, reason: config.check.detail, fix: config.check.fix ?? 'fix the configuration' };
  const hubUrl = settings.hubUrl;
  if (hubUrl === null) return { ok: false, reason: 'no Hub URL is configured', fix: 'pass --hub <url> or export MA2H_HUB_URL=<url>' };
  const credential = resolveAgentCredential({ env: req.io.env, hubUrl, agent: req.agent, stateRoot: req.stateRoot });
  if (!credential.ok) return { ok: false, reason: credential.error.message, fix: 'run oh-hai doctor for the setup checks' };
  const client = new HubClient({ baseUrl: hubUrl, token: credential.value.token, requestTimeoutMs: req.knobs.timeoutMs });
  try {
    let agentId = credential.value.agentId;
    if (agentId === null) {
      const who = await client.whoami();
      if (!who.ok)
        return {
          ok: false,
          reason: `this token's agent id is not cached and GET /v1/whoami failed (${describeFailure(who.failure)})`,
          fix: 'run oh-hai doctor for the Hub and credential checks',
        };
      if (who.value.kind !== 'agent')
        return { ok: false, reason: "the credential is the account's human token, not an agent token", fix: 'run oh-hai doctor for the credential check' };
      agentId = who.value.agent.id;
    }
    const located = locateBridge({ stateRoot: req.stateRoot, hubUrl, agentId, session: req.session }, req.io);
    if (!located.ok)
      return {
        ok: false,
        reason: `cannot tell which agent session this is: ${located.reason}`,
        fix: 'name it with --session <name> (the same one the bridge runs with)',
      };
    const checks = await checkBridge(located, { io: req.io, knobs: req.knobs, hub: { client }, configured: configuredBound(settings) });
    return { ok: true, report: buildReport(checks) };
  } finally {
    await client.close();
  }
}
