import { type Coded, done } from '../core/index.js';
import { type FileSettings, validateConfigDoc } from './config-file.js';
import { findProjectConfig, userConfigPath } from './paths.js';
import { readToml } from './toml-file.js';

export interface LoadedFile {
  path: string;
  found: boolean;
  settings: FileSettings;
}

export interface LoadedConfig {
  user: LoadedFile;
  /** The nearest `.oh-hai/config.toml` from the cwd upwards, or null when there is none. */
  project: LoadedFile | null;
  /** Every file consulted, for `doctor` and error messages. */
  files: { path: string; found: boolean }[];
  /** Unknown keys and the like: for the caller to print, never printed here. */
  warnings: string[];
}

function loadOne(path: string, scope: 'user' | 'project'): Coded<{ file: LoadedFile; warnings: string[] }> {
  const read = readToml(path);
  if (!read.ok) return read;
  if (!read.value.found) return done({ file: { path, found: false, settings: { numbers: {} } }, warnings: [] });
  const checked = validateConfigDoc(read.value.doc, path, scope);
  if (!checked.ok) return checked;
  return done({ file: { path, found: true, settings: checked.value.settings }, warnings: checked.value.warnings });
}

/** Read the user config and the nearest project config. Errors are usage errors (exit 2) naming the file. */
export function loadConfigFiles({ env, cwd }: { env: NodeJS.ProcessEnv; cwd: string }): Coded<LoadedConfig> {
  const user = loadOne(userConfigPath(env), 'user');
  if (!user.ok) return user;
  const projectPath = findProjectConfig(cwd, env);
  const project = projectPath === null ? null : loadOne(projectPath, 'project');
  if (project && !project.ok) return project;
  const files = [user.value.file, ...(project ? [project.value.file] : [])].map(({ path, found }) => ({ path, found }));
  return done({
    user: user.value.file,
    project: project ? project.value.file : null,
    files,
    warnings: [...user.value.warnings, ...(project ? project.value.warnings : [])],
  });
}
