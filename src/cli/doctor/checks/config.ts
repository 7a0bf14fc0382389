import { describePolicy, loadConfigFiles, resolveSettings, userConfigPath, type LoadedConfig, type ResolvedSettings } from '../../../config/index.js';
import { check, type Check } from '../report.js';

/**
 * The config family: the user and project files (found, valid) with the environment and
 * flags layered on them, and the sender policy they declare.
 */

export interface ConfigFindings {
  check: Check;
  /** Null when the files or the settings did not resolve (the check says why). */
  settings: ResolvedSettings | null;
}

const HUB_SOURCE: Record<ResolvedSettings['hubUrlSource'], string> = {
  flag: '--hub',
  env: 'MA2H_HUB_URL',
  project: 'the project config',
  user: 'the user config',
  none: 'nowhere',
};

function describeFiles(loaded: LoadedConfig): string {
  const user = `user ${loaded.user.path} (${loaded.user.found ? 'found' : 'not present — optional'})`;
  const project = loaded.project ? `project ${loaded.project.path} (found)` : 'no project .oh-hai/config.toml above the working directory';
  return `${user}; ${project}`;
}

export function configCheck(io: { env: NodeJS.ProcessEnv; cwd: string }, flags: { hub?: string }): ConfigFindings {
  const loaded = loadConfigFiles(io);
  const fix = 'correct what the message names (or move the file aside), then run oh-hai doctor again';
  if (!loaded.ok) return { check: check('config', 'fail', loaded.error.message, { fix }), settings: null };
  const settings = resolveSettings({ flags, env: io.env, loaded: loaded.value });
  if (!settings.ok) return { check: check('config', 'fail', `${describeFiles(loaded.value)} — but ${settings.error.message}`, { fix }), settings: null };
  const s = settings.value;
  const measured = {
    user_config: loaded.value.user.path,
    user_config_found: loaded.value.user.found,
    project_config: loaded.value.project?.path ?? null,
    hub_url: s.hubUrl,
    hub_url_source: s.hubUrlSource,
  };
  const hub = s.hubUrl === null ? 'no Hub URL set' : `Hub URL ${s.hubUrl} from ${HUB_SOURCE[s.hubUrlSource]}`;
  const detail = `${describeFiles(loaded.value)}; ${hub}`;
  if (s.warnings.length > 0) {
    return {
      check: check('config', 'warn', `${detail}; ${s.warnings.join('; ')}`, {
        fix: 'correct or remove the keys named above (unknown keys are ignored, so a typo silently does nothing)',
        measured,
      }),
      settings: s,
    };
  }
  return { check: check('config', 'pass', detail, { measured }), settings: s };
}

/** MA2H §13.4: an explicit policy is required; none declared is fail-closed, which works but refuses every addressed ask/task. */
export function policyCheck(settings: ResolvedSettings, env: NodeJS.ProcessEnv): Check {
  const file = userConfigPath(env);
  const b = settings.bridge;
  if (b.allowFromSource === 'none') {
    return check(
      'policy',
      'warn',
      'no sender policy declared: the bridge still delivers directives, notifies, responses and receipts, but refuses every addressed ask/task from a peer and leaves it unacked (fail-closed; the Hub keeps redelivering it)',
      {
        fix:
          `ask the operator who may ask/task this agent, then add [bridge] allow_from = ["agent:<id>"] (or ["any-in-account"]) to ${file} — ` +
          'or run oh-hai upgrade, which writes every agent in the account when no policy exists; never widen it just to make a command run',
        measured: { allow_from: null, source: 'none' },
      },
    );
  }
  const where = b.allowFromSource === 'flag' ? '--allow-from' : file;
  return check('policy', 'pass', `declared in ${where}: ${describePolicy(b.policy)} (a running connection enforces the policy it started with)`, {
    measured: { allow_from: b.allowFrom ?? [], source: b.allowFromSource },
  });
}
