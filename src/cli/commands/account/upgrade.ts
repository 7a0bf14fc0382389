import { checkExistingPolicy, requireHubUrl } from '../../../config/index.js';
import type { CliIO } from '../../io.js';
import { type Outcome, success, toOutcome } from '../../../core/index.js';
import { loadSettings, say, writePolicy } from './common.js';

export interface UpgradeOptions {
  hub?: string;
  agent?: string;
}

/**
 * `oh-hai upgrade`: the migration path. For now it writes the sender policy when none exists.
 * The never-widen check is the first thing it does: with a policy in place it says so and
 * stops, needing no Hub URL, no credential and no Hub call.
 */
export async function run(opts: UpgradeOptions, io: CliIO): Promise<Outcome> {
  const check = checkExistingPolicy(io.env);
  if (!check.ok) return toOutcome(check.error);
  if (check.value.exists) {
    say(io, check.value.lines);
    return success();
  }
  const settings = loadSettings(io, opts.hub);
  if (!settings.ok) return toOutcome(settings.error);
  const hubUrl = requireHubUrl(settings.value);
  if (!hubUrl.ok) return toOutcome(hubUrl.error);
  const policy = await writePolicy(io, hubUrl.value, 'upgrade', opts.agent);
  return policy.ok ? success() : toOutcome(policy.error);
}
