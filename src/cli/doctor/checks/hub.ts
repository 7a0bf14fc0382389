import type { AgentCredential } from '../../../config/index.js';
import { type Coded } from '../../../core/index.js';
import { chooseTransport, type Capability, type Whoami } from '../../../hub/contract/index.js';
import type { HubFailure, HubResult } from '../../../hub/client/index.js';
import { check, type Check } from '../report.js';

/**
 * The Hub family: reachable, an acceptable capability document, the clock offset against
 * it, and the credential as the Hub sees it. Pure judgements over what one call returned,
 * so each state is a table test.
 */

export const describeFailure = (f: HubFailure): string => (f.kind === 'http' ? `${f.status} ${f.code}: ${f.message}` : f.message);

/** One GET /v1/capability, with our wall clock read just before and just after it. */
export interface CapabilityProbe {
  result: HubResult<Capability>;
  beforeMs: number;
  afterMs: number;
  /** Monotonic. */
  tookMs: number;
}

export function hubCheck(url: string, probe: CapabilityProbe): Check {
  const took = Math.round(probe.tookMs);
  const measured = { url, ms: took };
  const r = probe.result;
  if (r.ok || r.failure.kind === 'protocol') {
    return check('hub', 'pass', `${url} answered GET /v1/capability in ${took} ms`, { measured });
  }
  if (r.failure.kind === 'http') {
    return check('hub', 'fail', `${url} answered GET /v1/capability with ${describeFailure(r.failure)}`, {
      fix: "the Hub is up but unhealthy (or this URL is not a Hub): check the URL, and the Hub's own status",
      measured,
    });
  }
  return check('hub', 'fail', `cannot reach ${url}: ${r.failure.message}`, {
    fix: "check the Hub URL (config, MA2H_HUB_URL or --hub), this machine's network and proxy, and that the Hub is up",
    measured,
  });
}

export function capabilityCheck(probe: CapabilityProbe, transport: 'auto' | 'sse' | 'poll'): Check {
  const r = probe.result;
  if (!r.ok) {
    if (r.failure.kind !== 'protocol') return check('capability', 'skip', 'not checked: the Hub did not answer with a capability document');
    return check('capability', 'fail', r.failure.message, {
      fix: 'point oh-hai at a Hub that speaks MA2H 0.5 or later with inbound.session_param (ask its operator to upgrade it)',
    });
  }
  const c = r.value;
  const drains = chooseTransport(c, transport);
  const how =
    drains === 'sse'
      ? `SSE at ${c.inbound.stream_url ?? ''}`
      : c.inbound.stream_url === null
        ? 'long-poll (the Hub advertises no stream)'
        : 'long-poll (transport set to poll)';
  return check('capability', 'pass', `MA2H ${c.version} with session_param; the bridge drains by ${how}`, {
    measured: {
      version: c.version,
      transport: drains,
      stream_url: c.inbound.stream_url,
      replay_window_seconds: c.replay_window_seconds,
      lease_min_seconds: c.session?.lease_min_seconds ?? null,
    },
  });
}

/** The Hub's clock minus ours, and how far off that figure can be (half the round trip, plus the Date header's whole second). */
export interface ClockOffset {
  offsetMs: number;
  uncertaintyMs: number;
  /** Where the Hub's time came from, for messages. */
  source: string;
}

export function measureOffset(probe: CapabilityProbe): ClockOffset | null {
  if (!probe.result.ok) return null;
  const mid = (probe.beforeMs + probe.afterMs) / 2;
  const half = Math.max(0, probe.afterMs - probe.beforeMs) / 2;
  const serverTime = probe.result.value.server_time;
  if (serverTime !== null) return { offsetMs: Date.parse(serverTime) - mid, uncertaintyMs: half, source: `the capability's server_time ${serverTime}` };
  const date = probe.result.serverDate;
  const parsed = date === null ? NaN : Date.parse(date);
  if (Number.isNaN(parsed)) return null;
  // A Date header is truncated to the second: its middle is half a second later.
  return { offsetMs: parsed + 500 - mid, uncertaintyMs: half + 500, source: `the Date header ${date}` };
}

/** Past this the clocks disagree enough to mention; beyond the replay window every delivery's t reads as stale. */
export const CLOCK_WARN_MS = 5000;

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export function clockCheck(offset: ClockOffset | null, windowSeconds: number, windowSource: string): Check {
  if (offset === null) {
    return check('clock', 'warn', 'the Hub sent neither server_time nor a Date header, so the clocks cannot be compared', {
      fix: 'make sure this machine keeps time (NTP): a clock off by more than the replay window makes every delivery look stale',
    });
  }
  const abs = Math.abs(offset.offsetMs);
  const way = offset.offsetMs >= 0 ? 'ahead of' : 'behind';
  const windowMs = windowSeconds * 1000;
  const warnAt = Math.min(CLOCK_WARN_MS, windowMs / 2);
  const measured = { offset_ms: Math.round(offset.offsetMs), uncertainty_ms: Math.round(offset.uncertaintyMs), replay_window_seconds: windowSeconds };
  const said = `the Hub's clock is ${secs(abs)} ${way} this machine's (±${secs(offset.uncertaintyMs)}, from ${offset.source})`;
  const fix = "set this machine's clock (enable NTP, e.g. timedatectl set-ntp true), or ask the Hub's operator to fix theirs if this machine is right";
  if (abs - offset.uncertaintyMs > windowMs) {
    return check(
      'clock',
      'fail',
      `${said}: more than the ${windowSeconds} s replay window (${windowSource}), so the bridge rejects every delivery as a stale t (exit 12)`,
      { fix, measured },
    );
  }
  if (abs > warnAt) {
    return check('clock', 'warn', `${said}: inside the ${windowSeconds} s replay window (${windowSource}), but it eats into it`, { fix, measured });
  }
  return check('clock', 'pass', `${said}; the replay window is ${windowSeconds} s (${windowSource})`, { measured });
}

const SOURCE: Record<AgentCredential['source'], string> = {
  OH_HAI_TOKEN: 'the OH_HAI_TOKEN environment variable',
  MA2H_AGENT_TOKENS: 'MA2H_AGENT_TOKENS',
  credentials: 'the credentials file',
};

export function describeSource(c: AgentCredential, credentialsFile: string): string {
  return c.source === 'credentials' ? `${SOURCE.credentials} ${credentialsFile}` : SOURCE[c.source];
}

const CREDENTIAL_FIX: Record<string, string> = {
  several_agents: 'pick one identity with --agent <id>',
  unknown_agent: 'pass an --agent the credential store holds, or drop --agent',
};

/**
 * The credential: resolved locally (which source — never the token), then as the Hub sees
 * it. `who` is null when the Hub was not asked (it could not be reached).
 */
export function credentialCheck(
  resolved: Coded<AgentCredential>,
  who: HubResult<Whoami> | null,
  ctx: { hubUrl: string; credentialsFile: string },
): { check: Check; agentId: string | null } {
  const loginFix = `store an agent token with oh-hai login --hub ${ctx.hubUrl} --token-stdin < token-file, or export OH_HAI_TOKEN=<token> in the agent's environment`;
  if (!resolved.ok) {
    return { check: check('credential', 'fail', resolved.error.message, { fix: CREDENTIAL_FIX[resolved.error.code] ?? loginFix }), agentId: null };
  }
  const c = resolved.value;
  const from = describeSource(c, ctx.credentialsFile);
  const measured = { source: c.source, agent_id: c.agentId };
  if (who === null) {
    return {
      check: check(
        'credential',
        'warn',
        `resolves from ${from}${c.agentId ? ` (agent ${c.agentId})` : ''}; not verified, because the Hub could not be reached`,
        {
          fix: 'fix the hub check first, then run oh-hai doctor again',
          measured,
        },
      ),
      agentId: c.agentId,
    };
  }
  if (!who.ok) {
    const f = who.failure;
    if (f.kind === 'http' && f.status === 401) {
      return {
        check: check('credential', 'fail', `resolves from ${from}, but the Hub refused it (${describeFailure(f)}): it is revoked or unknown`, {
          fix: `a human must mint a new agent token in the Hub; then ${loginFix}`,
          measured,
        }),
        agentId: c.agentId,
      };
    }
    return {
      check: check('credential', 'warn', `resolves from ${from}; GET /v1/whoami failed (${describeFailure(f)}), so it is not verified`, {
        fix: 'run oh-hai doctor again; if it repeats, the Hub is unhealthy',
        measured,
      }),
      agentId: c.agentId,
    };
  }
  if (who.value.kind !== 'agent') {
    return {
      check: check('credential', 'fail', `resolves from ${from}, but it is the account's human token; the bridge needs an agent token`, {
        fix: `mint an agent token in the Hub; then ${loginFix}`,
        measured,
      }),
      agentId: null,
    };
  }
  const agent = who.value.agent;
  if (c.agentId !== null && c.agentId !== agent.id) {
    return {
      check: check('credential', 'fail', `${from} files this token under agent ${c.agentId}, but the Hub says it is agent ${agent.id}`, {
        fix: `store it under the right id (oh-hai login --hub ${ctx.hubUrl} --token-stdin < token-file) or correct MA2H_AGENT_TOKENS`,
        measured: { ...measured, hub_agent_id: agent.id },
      }),
      agentId: null,
    };
  }
  const label = agent.label ? ` "${agent.label}"` : '';
  return {
    check: check('credential', 'pass', `resolves from ${from}; the Hub accepts it as agent ${agent.id}${label}`, {
      measured: { ...measured, agent_id: agent.id },
    }),
    agentId: agent.id,
  };
}
