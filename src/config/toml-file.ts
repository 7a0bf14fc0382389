import { readFileSync } from 'node:fs';
import { type Coded, done, usageFailure } from '../core/index.js';

type SmolToml = typeof import('smol-toml');

let smolToml: SmolToml | null = null;

/**
 * smol-toml, loaded on the first parse: a run with no config file never pays for it, and
 * its one-file CommonJS build loads in about half the time of its nine ES modules
 * (docs/performance.md). Synchronous, so the config readers stay synchronous.
 */
function toml(): SmolToml {
  // node:module only then: a bridge run loading it for nothing costs ~0.3 M instructions (docs/performance.md).
  smolToml ??= process.getBuiltinModule('node:module').createRequire(import.meta.url)('smol-toml') as SmolToml;
  return smolToml;
}

export type TomlDoc = Record<string, unknown>;

export type TomlRead = { found: false } | { found: true; text: string; doc: TomlDoc };

/** Parse TOML text; a syntax error names the file, line and column, and what to do. */
export function parseToml(text: string, file: string): Coded<TomlDoc> {
  const { parse, TomlError } = toml();
  try {
    return done(parse(text) as TomlDoc);
  } catch (e) {
    if (e instanceof TomlError) {
      const what = e.message.split('\n')[0]?.replace(/^Invalid TOML document: /u, '') ?? 'invalid TOML';
      return usageFailure('config_syntax', `${file}, line ${e.line}, column ${e.column}: invalid TOML (${what}); fix that line`);
    }
    throw e;
  }
}

/** Read and parse a TOML file; a missing file is `found: false`, any other read failure is a usage error naming it. */
export function readToml(file: string): Coded<TomlRead> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return done({ found: false });
    return usageFailure('config_unreadable', `${file}: cannot read it (${code ?? String(e)}); fix its permissions or remove it`);
  }
  const parsed = parseToml(text, file);
  if (!parsed.ok) return parsed;
  return done({ found: true, text, doc: parsed.value });
}
