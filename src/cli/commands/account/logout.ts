import { type HubCredentials, updateCredentials } from '../../../config/index.js';
import type { CliIO } from '../../io.js';
import { type Outcome, success, toOutcome } from '../../../core/index.js';
import { envOutranksNote, loadSettings, say } from './common.js';

export interface LogoutOptions {
  hub?: string;
  human?: boolean;
  agent?: string;
}

/**
 * `oh-hai logout [--hub URL] [--human] [--agent <id>]`: forget stored tokens. With neither
 * --human nor --agent it forgets everything stored for the Hub; with no Hub configured at
 * all, everything stored for every Hub. Local only: the Hub still honours a token until it
 * is revoked there, and the command says so.
 */
export async function run(opts: LogoutOptions, io: CliIO): Promise<Outcome> {
  const settings = loadSettings(io, opts.hub);
  if (!settings.ok) return toOutcome(settings.error);
  const hubUrl = settings.value.hubUrl;
  const everything = !opts.human && opts.agent === undefined;
  const removed: string[] = [];
  const forget = (h: HubCredentials) => {
    if ((opts.human || everything) && h.human) {
      removed.push(`the human token of account ${h.human.account_id} for ${h.hub}`);
      h.human = null;
    }
    for (const a of h.agents.filter((a) => everything || a.id === opts.agent)) removed.push(`the agent token of ${a.id} for ${h.hub}`);
    h.agents = h.agents.filter((a) => !(everything || a.id === opts.agent));
  };
  const updated = await updateCredentials(io.env, (file) => file.hubs.filter((h) => hubUrl === null || h.hub === hubUrl).forEach(forget));
  if (!updated.ok) return toOutcome(updated.error);
  const scope = hubUrl ?? 'any Hub';
  if (removed.length === 0) {
    const what = everything
      ? 'no credentials'
      : [opts.human ? 'no human token' : null, opts.agent === undefined ? null : `no token for agent ${opts.agent}`].filter(Boolean).join(' and ');
    say(io, [`${what} stored for ${scope} in ${updated.value.path}; nothing removed.`]);
  } else {
    say(io, [
      ...removed.map((r) => `removed ${r} from ${updated.value.path}.`),
      'This is local only: the Hub keeps honouring a token until it is revoked there.',
    ]);
  }
  say(
    io,
    envOutranksNote(io.env).map((n) => `${n} It is not affected by logout.`),
  );
  return success();
}
