import type { RetiredFlagValues } from './retired.js';

/** `oh-hai bridge` flags as commander (or parseBridgeArgv) hands them over. */
export interface BridgeOptions extends RetiredFlagValues {
  wait?: string;
  session?: string;
  stateHome?: string;
  raw?: boolean;
  json?: boolean;
  allowFrom?: string[];
  transport?: string;
  interval?: string;
  maxRetries?: string;
  hub?: string;
  agent?: string;
  exitCodes?: boolean;
}

/**
 * The options `oh-hai bridge` declares, once: register.ts hands them to commander, and
 * parseBridgeArgv reads the plain run of the bridge without commander.
 */
export interface BridgeOptionSpec {
  flags: string;
  description: string;
  key: keyof BridgeOptions;
  /** value: `--x <v>` (the last one wins); list: repeatable, collected in order; flag: no value. */
  takes: 'value' | 'list' | 'flag';
}

export const BRIDGE_OPTIONS: readonly BridgeOptionSpec[] = [
  {
    flags: '--wait <seconds>',
    key: 'wait',
    takes: 'value',
    description: 'wait bound when nothing is waiting (default 540; [bridge] wait_seconds, OH_HAI_WAIT_SECONDS)',
  },
  {
    flags: '--session <name|sess_id>',
    key: 'session',
    takes: 'value',
    description: "this agent session: a name, or a Hub session id (sess_… or any id your Hub gives one of this agent's sessions) that pins that session",
  },
  { flags: '--state-home <absolute path>', key: 'stateHome', takes: 'value', description: 'a separate state root (absolute only)' },
  { flags: '--raw', key: 'raw', takes: 'flag', description: 'print each spool envelope verbatim, one NDJSON line per record (for programs)' },
  { flags: '--json', key: 'json', takes: 'flag', description: 'the same as --raw' },
  {
    flags: '--allow-from <item>',
    key: 'allowFrom',
    takes: 'list',
    description: 'who may ask/task this agent: any-in-account, agent:<id>, agent:<id>#sess_…, or an agent label (resolved to its id) (repeatable)',
  },
  {
    flags: '--transport <auto|sse|poll>',
    key: 'transport',
    takes: 'value',
    description: 'how the connection drains (default auto: SSE when the Hub offers it)',
  },
  { flags: '--interval <seconds>', key: 'interval', takes: 'value', description: 'long-poll interval (default 5)' },
  { flags: '--max-retries <n>', key: 'maxRetries', takes: 'value', description: 'reconnect budget for genuine faults before exit 13 (default 8)' },
  { flags: '--hub <url>', key: 'hub', takes: 'value', description: 'the Hub URL (default: MA2H_HUB_URL, then config)' },
  { flags: '--agent <id>', key: 'agent', takes: 'value', description: 'which identity, when several tokens are configured' },
  { flags: '--exit-codes', key: 'exitCodes', takes: 'flag', description: 'print the exit-code table and exit (no credential, no Hub call)' },
];

const BY_NAME = new Map(BRIDGE_OPTIONS.map((o) => [o.flags.split(' ')[0]!, o]));

/**
 * The options of `oh-hai bridge [options]` when argv is nothing but the options above, each
 * spelled `--name value`, `--name=value` or `--name`; null for anything else (help, a
 * subcommand, a retired or unknown flag, a value that looks like a flag, …), which commander
 * then parses. Commander costs a re-run bridge ~1.5 ms (docs/performance.md); the agent's
 * plain re-run never needs it. test/unit/bridge/options.test.ts holds the two to the same
 * result for every argv this accepts.
 */
export function parseBridgeArgv(argv: readonly string[]): BridgeOptions | null {
  if (argv[0] !== 'bridge') return null;
  const opts: BridgeOptions = {};
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const spec = BY_NAME.get(eq === -1 ? arg : arg.slice(0, eq));
    if (spec === undefined) return null;
    if (spec.takes === 'flag') {
      if (eq !== -1) return null;
      (opts as Record<string, unknown>)[spec.key] = true;
      continue;
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined || value.startsWith('-')) return null;
    if (spec.takes === 'list') opts.allowFrom = [...(opts.allowFrom ?? []), value];
    else (opts as Record<string, unknown>)[spec.key] = value;
  }
  return opts;
}
