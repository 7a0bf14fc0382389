import { fail, type Result } from '../core/index.js';
import { parseConsumerSettings, type ConsumerSettings } from './records.js';

/**
 * The settings a reader hands the connection it launches, in that process's environment.
 * settings.json is shared by every run of the entry: a second run's write between a launch
 * and the connection's lock would reach the first run's connection instead (docs/bridge.md
 * "One consumer per entry"). The environment is the launched process's alone and, unlike argv,
 * readable only by its user; nothing in it is secret (the Hub URL may not carry credentials,
 * config/hub-url.ts; the token stays where it was).
 */
export const HANDED_SETTINGS_ENV = 'OH_HAI_CONNECTION_SETTINGS';

export const withHandedSettings = (env: NodeJS.ProcessEnv, settings: ConsumerSettings): NodeJS.ProcessEnv => ({
  ...env,
  [HANDED_SETTINGS_ENV]: JSON.stringify(settings),
});

/** What a reader handed this process; null when nothing was (a consumer run by hand with --entry reads settings.json). */
export function handedSettings(env: NodeJS.ProcessEnv): Result<ConsumerSettings> | null {
  const text = env[HANDED_SETTINGS_ENV];
  if (text === undefined) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail(`${HANDED_SETTINGS_ENV} is not JSON`);
  }
  const parsed = parseConsumerSettings(json);
  return parsed.ok ? parsed : fail(`${HANDED_SETTINGS_ENV}: ${parsed.reason}`);
}
