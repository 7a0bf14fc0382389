import { checkKnob, type Coded, describeValue, done, knobExpected, SETTING_KNOBS, type SettingKnob, settingOf, usageFailure } from '../core/index.js';
import { parseHubUrl } from './hub-url.js';
import { type Transport, checkTransport } from './transport.js';
import { parsePolicy } from './policy.js';
import { parseRetainPrinted, type RetainPrinted } from './retention.js';
import type { TomlDoc } from './toml-file.js';

/** What one config file sets; absent keys are left for the next layer. */
export interface FileSettings {
  hubUrl?: string;
  allowFrom?: string[];
  transport?: Transport;
  retainPrinted?: RetainPrinted;
  numbers: Partial<Record<SettingKnob, number>>;
}

export type ConfigScope = 'user' | 'project';

const isTable = (v: unknown): v is TomlDoc => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

const knobByKey = new Map(SETTING_KNOBS.map((k) => [settingOf(k).key, k]));
const knownBridgeKeys = ['allow_from', 'transport', ...knobByKey.keys(), 'retain_printed'];

/**
 * Validate a parsed config file. Unknown keys become warnings (a typo must be visible, but a
 * newer key must not break an older CLI); a wrong type is a usage error naming the file, the
 * key and the expected type. A project file may not set `[bridge]` at all.
 */
export function validateConfigDoc(doc: TomlDoc, file: string, scope: ConfigScope): Coded<{ settings: FileSettings; warnings: string[] }> {
  const warnings: string[] = [];
  const settings: FileSettings = { numbers: {} };
  const typeError = (key: string, expected: string, got: unknown) =>
    usageFailure<never>('invalid_setting', `${file}: ${key} must be ${expected}, got ${describeValue(got)}`);

  if (scope === 'project' && 'bridge' in doc)
    return usageFailure(
      'project_sets_bridge',
      `${file}: a project config may not set [bridge] — a repository must not widen who may ask your agent, or change how it is reached. ` +
        `Remove the [bridge] table from that file; put bridge settings in your user config, or pass them as flags`,
    );

  for (const [top, value] of Object.entries(doc)) {
    if (top === 'hub') {
      if (!isTable(value)) return typeError('[hub]', 'a table', value);
      for (const [key, v] of Object.entries(value)) {
        if (key !== 'url') {
          warnings.push(`${file}: unknown key [hub] ${key} (ignored; the known key is url)`);
          continue;
        }
        if (typeof v !== 'string') return typeError('[hub] url', 'a string (the Hub origin, e.g. "https://hub.example.com")', v);
        const url = parseHubUrl(v, `${file}: [hub] url`);
        if (!url.ok) return url;
        settings.hubUrl = url.value;
      }
    } else if (top === 'bridge') {
      if (!isTable(value)) return typeError('[bridge]', 'a table', value);
      for (const [key, v] of Object.entries(value)) {
        const where = `${file}: [bridge] ${key}`;
        const knob = knobByKey.get(key);
        if (key === 'allow_from') {
          if (!Array.isArray(v) || !v.every((item): item is string => typeof item === 'string'))
            return typeError('[bridge] allow_from', 'a list of strings, e.g. ["agent:agt_123"] or ["any-in-account"]', v);
          const policy = parsePolicy(v);
          if (!policy.ok) return usageFailure('invalid_policy', `${where}: ${policy.reason}`);
          settings.allowFrom = v;
        } else if (key === 'transport') {
          const t = checkTransport(v, where);
          if (!t.ok) return t;
          settings.transport = t.value;
        } else if (key === 'retain_printed') {
          const r = parseRetainPrinted(v, where);
          if (!r.ok) return r;
          settings.retainPrinted = r.value;
        } else if (knob !== undefined) {
          if (typeof v !== 'number') return typeError(`[bridge] ${key}`, knobExpected(knob), v);
          const n = checkKnob(knob, v, where);
          if (!n.ok) return n;
          settings.numbers[knob] = n.value;
        } else {
          warnings.push(`${file}: unknown key [bridge] ${key} (ignored; known keys: ${knownBridgeKeys.join(', ')})`);
        }
      }
    } else {
      // A misspelt table drops every key under it (`[brdge]` loses the sender policy), so say which it was.
      const what = isTable(value) ? `table [${top}] (ignored, with every key in it` : `key ${top} (ignored`;
      warnings.push(`${file}: unknown ${what}; known tables: [hub], [bridge])`);
    }
  }
  return done({ settings, warnings });
}
