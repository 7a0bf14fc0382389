import { writeFileAtomic } from '../util/fs-durable.js';
import { type Coded, done, usageFailure } from '../core/index.js';
import { withFileLock } from './file-lock.js';
import { parseHubUrl } from './hub-url.js';
import { userConfigPath } from './paths.js';
import { insertTableKey, tomlString } from './toml-edit.js';
import { type TomlDoc, readToml } from './toml-file.js';

export interface UserConfigText {
  path: string;
  text: string;
  doc: TomlDoc;
}

/**
 * Read-modify-write the user config under its lock: `edit` sees the current text (empty when
 * the file does not exist) and returns the new text, or null to leave the file alone, plus a
 * result. The write is atomic (temp, fsync, rename, fsync dir), 0600.
 */
export function editUserConfig<T>(env: NodeJS.ProcessEnv, edit: (current: UserConfigText) => Coded<{ text: string | null; result: T }>): Promise<Coded<T>> {
  const path = userConfigPath(env);
  return withFileLock(path, (): Coded<T> => {
    const read = readToml(path);
    if (!read.ok) return read;
    const current = read.value.found ? { path, text: read.value.text, doc: read.value.doc } : { path, text: '', doc: {} };
    const edited = edit(current);
    if (!edited.ok) return edited;
    if (edited.value.text !== null) writeFileAtomic(path, edited.value.text, 0o600);
    return done(edited.value.result);
  });
}

/** `[hub] url` of a parsed config, when it is a string. */
export const configuredHubUrl = (doc: TomlDoc): string | null => {
  const hub = doc.hub;
  if (hub === null || typeof hub !== 'object' || Array.isArray(hub)) return null;
  const url = (hub as TomlDoc).url;
  return typeof url === 'string' ? url : null;
};

/**
 * Record the Hub in the user config (what `oh-hai setup` does once the login worked). A
 * different Hub already there is refused, not replaced: the user's file wins over a flag.
 */
export function writeHubUrlIfAbsent(env: NodeJS.ProcessEnv, hubUrl: string): Promise<Coded<'written' | 'already'>> {
  return editUserConfig(env, ({ path, text, doc }) => {
    const existing = configuredHubUrl(doc);
    if (existing !== null) {
      const parsed = parseHubUrl(existing, `${path}: [hub] url`);
      if (parsed.ok && parsed.value === hubUrl) return done({ text: null, result: 'already' as const });
      return usageFailure(
        'hub_url_differs',
        `${path} already names the Hub ${existing}, not ${hubUrl}; edit [hub] url there by hand to switch Hubs, then re-run`,
      );
    }
    const edited = insertTableKey({ text, doc, file: path }, 'hub', 'url', hubUrl, tomlString(hubUrl));
    if (!edited.ok) return edited;
    return done({ text: edited.value, result: 'written' as const });
  });
}
