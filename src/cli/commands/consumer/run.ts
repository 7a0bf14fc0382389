import { runConsumer, type Stop } from '../../../consumer/index.js';
import { handedSettings, hostName, type ConsumerSettings } from '../../../spool/index.js';
import { EXIT, usageError, type Outcome } from '../../../core/index.js';
import type { CliIO } from '../../io.js';
import { VERSION } from '../../version.js';
import type { ConsumerFlags } from './register.js';

const RESOLVE_FLAGS = ['session', 'hub', 'stateHome', 'allowFrom', 'transport', 'interval', 'maxRetries', 'agent'] as const;
const flagName = (k: string): string => '--' + k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());

/** Where the entry and its settings come from: what the launching reader handed over (else settings.json), or (direct mode) our own resolution. */
async function locate(
  flags: ConsumerFlags,
  io: CliIO,
): Promise<{ ok: true; dir: string; settings: ConsumerSettings | null } | { ok: false; outcome: Outcome }> {
  const named = RESOLVE_FLAGS.filter((k) => flags[k] !== undefined);
  if (flags.entry !== undefined) {
    if (named.length > 0) {
      return {
        ok: false,
        outcome: usageError(
          `--entry takes every setting from the entry's settings.json; drop ${named.map(flagName).join(', ')} (or drop --entry and name the mailbox with --mode direct --session <name>)`,
        ),
      };
    }
    const handed = handedSettings(io.env);
    if (handed && !handed.ok) return { ok: false, outcome: usageError(`${handed.reason}; the reader that started this connection hands it its settings`) };
    return { ok: true, dir: flags.entry, settings: handed?.value ?? null };
  }
  if (flags.mode !== 'direct' || flags.session === undefined) {
    return {
      ok: false,
      outcome: usageError(
        'name the state entry: --entry <dir> (as the reader does), or for a service manager --mode direct --session <name> (a unit must name its mailbox)',
      ),
    };
  }
  // Loaded only here: the reader-started consumer (--entry) never needs flag resolution.
  const { connectionSettings, processInspector, resolveBridge } = await import('../../resolve/index.js');
  const resolved = await resolveBridge({
    flags: {
      session: flags.session,
      hub: flags.hub,
      stateHome: flags.stateHome,
      allowFrom: flags.allowFrom,
      transport: flags.transport,
      interval: flags.interval,
      maxRetries: flags.maxRetries,
      agent: flags.agent,
    },
    io,
    create: true,
    host: hostName(),
    inspect: processInspector,
  });
  if (!resolved.ok) return { ok: false, outcome: { exit: resolved.error.exit, code: resolved.error.code, message: resolved.error.message } };
  const r = resolved.value;
  for (const w of r.warnings) io.stderr.write(`oh-hai __consumer: ${w}\n`);
  return { ok: true, dir: r.stateDir.dir, settings: connectionSettings(r, r.sessionKey, flags.agent ?? null) };
}

/**
 * SIGTERM and SIGINT are clean stops that exit 0 in both modes: the reader's `session
 * close` asks with SIGTERM and waits for it, and under systemd a handled SIGTERM that
 * exits 143 is a failure to Restart=on-failure.
 */
function shutdownSignal(): { signal: AbortSignal; dispose(): void } {
  const ac = new AbortController();
  const on = (sig: NodeJS.Signals) => ac.abort(sig);
  process.on('SIGTERM', on);
  process.on('SIGINT', on);
  return {
    signal: ac.signal,
    dispose: () => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
    },
  };
}

function outcomeOf(s: Stop): Outcome {
  if (s.exit === EXIT.ok) return { exit: EXIT.ok, code: s.reason, message: `stopped (${s.reason}): ${s.message}`, style: 'plain' };
  return { exit: s.exit, code: s.reason, message: s.message, style: s.exit === EXIT.stoodDown ? 'stood_down' : 'fatal' };
}

export async function run(flags: ConsumerFlags, io: CliIO): Promise<Outcome> {
  const located = await locate(flags, io);
  if (!located.ok) return located.outcome;
  const shutdown = shutdownSignal();
  try {
    const end = await runConsumer({
      dir: located.dir,
      mode: flags.mode,
      env: io.env,
      clock: io.clock,
      pid: io.pid,
      stderr: flags.mode === 'direct' ? io.stderr : null,
      shutdown: shutdown.signal,
      version: VERSION,
      settings: located.settings,
    });
    return outcomeOf(end.stop);
  } finally {
    shutdown.dispose();
  }
}
