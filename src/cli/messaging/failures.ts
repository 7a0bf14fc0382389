import type { CredentialSource } from '../../config/index.js';
import type { HubFailure } from '../../hub/client/index.js';
import { CHECK_HUB_URL, noSuchEndpoint } from '../../hub/client/result.js';
import { EXIT, type CodedError } from '../../core/index.js';

export interface FailureContext {
  hubUrl: string;
  credential: CredentialSource;
  /** What was being done, for the message: e.g. `sending an ask to agent:…`. */
  doing: string;
  /** The request, when `doing` does not make it plain (`GET /v1/capability`); a network failure's message names it already. */
  request?: string;
}

const LOGIN_FIX = 'a human must fix the credential: `oh-hai login --token-stdin < token-file`, or export OH_HAI_TOKEN=<agent token>';

/**
 * A Hub failure as an error value with the exit code of the product doc's table and a
 * message naming what failed and the fix. Codes a specific command can say more about
 * (a recipient that does not exist, a message already answered) are mapped by that
 * command before it falls back to this.
 */
export function hubFailureError(f: HubFailure, given: FailureContext): CodedError {
  const ctx = given.request === undefined || f.kind === 'network' ? given : { ...given, doing: `${given.doing} (${given.request})` };
  if (f.kind === 'network') {
    return {
      code: 'hub_unreachable',
      exit: EXIT.unreachable,
      message: `could not reach the Hub at ${ctx.hubUrl} while ${ctx.doing} (${f.message}); re-run with your own backoff, and escalate if it repeats`,
    };
  }
  if (f.kind === 'protocol') {
    return {
      code: 'hub_protocol',
      exit: EXIT.unreachable,
      message: `the Hub at ${ctx.hubUrl} answered ${ctx.doing} with something that is not MA2H (${f.message}); check that the URL is a Hub`,
    };
  }
  const said = `${f.status} ${f.code}: ${f.message}`;
  switch (f.code) {
    case 'unauthorized':
      return {
        code: f.code,
        exit: EXIT.auth,
        message: `the Hub refused the credential from ${ctx.credential} while ${ctx.doing} (${said}) — it is missing, unknown or revoked; ${LOGIN_FIX}`,
      };
    case 'messaging_disabled':
      return {
        code: f.code,
        exit: EXIT.auth,
        message: `agent messaging is switched off for this account (${said}); a human turns it on in the Hub's Settings → Agent messaging (on the reference Hub: \`oh-hai hub messaging on\`)`,
      };
    case 'idempotency_conflict':
      return {
        code: f.code,
        exit: EXIT.internal,
        message: `the Hub says this send's idempotency key was already used for another message (${said}); keys are made per invocation, so this is a bug in oh-hai`,
      };
    case 'forbidden':
      return {
        code: f.code,
        exit: EXIT.auth,
        message: `the Hub refused ${ctx.doing} for this kind of token (${said}); messaging needs an agent token, not the account's human token`,
      };
  }
  if (noSuchEndpoint(f))
    return { code: f.code, exit: EXIT.unreachable, message: `${ctx.hubUrl} has no such endpoint (${ctx.doing}: ${said}): ${CHECK_HUB_URL}` };
  if (f.status === 429 || f.status >= 500) {
    return {
      code: f.code,
      exit: EXIT.unreachable,
      message: `the Hub at ${ctx.hubUrl} kept failing while ${ctx.doing} (${said}); re-run with your own backoff, and escalate if it repeats`,
    };
  }
  if (f.status === 404 || f.status === 410)
    return { code: f.code, exit: EXIT.noSession, message: `${ctx.doing} failed: ${said}; ${GONE_FIX[f.code] ?? GONE_FIX.default}` };
  if (f.status >= 400 && f.status < 500) return { code: f.code, exit: EXIT.usage, message: `the Hub refused ${ctx.doing} (${said})` };
  return { code: f.code, exit: EXIT.unreachable, message: `the Hub answered ${ctx.doing} with ${said}` };
}

/**
 * What to do about a 404 or 410 a command did not map itself, by the MA2H code (the Hub's
 * words say what is missing; these say where to look).
 */
const ENDED_FIX = "that session has ended and takes no more mail: address a live one from `oh-hai fleet ls --sessions`, or the agent's agent:<id>";
const GONE_FIX: Record<string, string> = {
  session_not_found: 'check the session against `oh-hai fleet ls --sessions`, or drop --session / MA2H_SESSION_ID',
  message_not_found: 'check the id against `oh-hai messages list` and `oh-hai messages list --received`',
  agent_not_found: 'check the agent against `oh-hai fleet ls`',
  recipient_not_found: 'check the address against `oh-hai fleet ls`',
  session_lapsed: ENDED_FIX,
  session_closed: ENDED_FIX,
  session_closed_by_operator: ENDED_FIX,
  default: 'check the ids and addresses you gave against `oh-hai fleet ls` and `oh-hai messages list`',
};

/** Worth sending again with the same idempotency key: the network, 5xx and 429 — never a refusal. */
export const isTransient = (f: HubFailure): boolean => f.kind === 'network' || (f.kind === 'http' && (f.status === 429 || f.status >= 500));
