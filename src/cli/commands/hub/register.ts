import { InvalidArgumentError, type Command } from 'commander';
import type { Registration } from '../index.js';
import type { LogFormat } from '../../../hub/server/log-sink.js';
import type { AdminFlags } from '../../hub-admin.js';

/** A number of seconds (fractional allowed: test Hubs use sub-second holds); above 0 unless `allowZero`. */
function seconds(flag: string, allowZero = false) {
  return (raw: string): number => {
    const v = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(v) || v < 0 || (v === 0 && !allowZero)) {
      throw new InvalidArgumentError(`${flag} takes a number of seconds ${allowZero ? '≥ 0' : 'above 0'} (fractions allowed), got "${raw}"`);
    }
    return v;
  };
}

function integer(flag: string, min: number, max: number) {
  return (raw: string): number => {
    const v = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || v < min || v > max) throw new InvalidArgumentError(`${flag} takes an integer ${min}–${max}, got "${raw}"`);
    return v;
  };
}

const adminFlags = (c: Command): Command =>
  c
    .option('--data <dir>', 'the Hub data dir (default: <state root>/oh-hai/hub)')
    .option('--hub <url>', 'the Hub URL (default: the URL the running Hub recorded in its data dir)')
    .option('--json', 'print the Hub answer as one JSON document (fields: JSON OUTPUT in the man page)');

export interface ServeFlags {
  port?: number;
  host?: string;
  data?: string;
  signingKey?: string;
  leaseMinSeconds?: number;
  leaseDefaultSeconds?: number;
  leaseMaxSeconds?: number;
  streamMaxHoldSeconds?: number;
  keepaliveSeconds?: number;
  maxWaitSeconds?: number;
  presenceSeconds?: number;
  messageTtlSeconds?: number;
  replayWindowSeconds?: number;
  holderStaleSeconds?: number;
  pageBytes?: number;
  streamWriteTimeoutSeconds?: number;
  maxConnections?: number;
  webSigninDelaySeconds?: number;
  clockOffsetMs?: number;
  faultInjection?: boolean;
  agentDirectory?: boolean;
  database?: string;
  adminListen?: string;
  logFormat?: LogFormat;
  trustProxy?: string;
}

export const register: Registration = (program, host) => {
  const hub = program.command('hub').description('run the reference MA2H Hub and administer it');

  hub
    .command('serve')
    .description('run the reference Hub (prints "hub: listening on <url>" when ready; SIGTERM stops it cleanly)')
    .option('--port <n>', 'TCP port (default 8417; 0 = an ephemeral port)', integer('--port', 0, 65535))
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--data <dir>', 'durable store (default: <state root>/oh-hai/hub)')
    .option('--signing-key <key>', 'delivery HMAC key (prefer MA2H_SIGNING_KEY: argv is visible to other users; random per start when unset)')
    .option('--lease-min-seconds <s>', 'smallest lease a session may ask for (default 60)', seconds('--lease-min-seconds'))
    .option('--lease-default-seconds <s>', 'lease when a session asks for none (default 900)', seconds('--lease-default-seconds'))
    .option('--lease-max-seconds <s>', 'largest lease (default 3600)', seconds('--lease-max-seconds'))
    .option('--stream-max-hold-seconds <s>', 'bound on one SSE hold (default 30)', seconds('--stream-max-hold-seconds'))
    .option('--keepalive-seconds <s>', 'SSE keep-alive comment interval (default 15)', seconds('--keepalive-seconds'))
    .option(
      '--max-wait-seconds <s>',
      'long-poll clamp (default MA2H_MAX_WAIT_SECONDS or 25; never above 60 or the presence window)',
      seconds('--max-wait-seconds', true),
    )
    .option('--presence-seconds <s>', 'presence window for reachability (default 90)', seconds('--presence-seconds'))
    .option('--message-ttl-seconds <s>', 'unacknowledged mail expires after this (default 7 days)', seconds('--message-ttl-seconds'))
    .option('--replay-window-seconds <s>', 'replay window advertised to clients (default 120)', seconds('--replay-window-seconds'))
    .option('--holder-stale-seconds <s>', 'a holder unseen this long no longer blocks another home (default 60)', seconds('--holder-stale-seconds'))
    .option(
      '--page-bytes <n>',
      'bytes of deliveries in one SSE event or drain answer at most; one entry always fits (default 1048576)',
      integer('--page-bytes', 1, 2 ** 31),
    )
    .option(
      '--stream-write-timeout-seconds <s>',
      'drop a stream whose reader takes no bytes this long while a write waits (default 10)',
      seconds('--stream-write-timeout-seconds'),
    )
    .option(
      '--max-connections <n>',
      'open client connections at most; idle ones are shed first (default: the fd limit less 64)',
      integer('--max-connections', 1, 1e7),
    )
    .option(
      '--web-signin-delay-seconds <s>',
      'a refused web sign-in is answered after this, doubling per recent refusal from its address, up to 30 s (default 1)',
      seconds('--web-signin-delay-seconds'),
    )
    .option('--clock-offset-ms <ms>', "shift the Hub's clock from the real one (tests)", integer('--clock-offset-ms', -1e12, 1e12))
    .option('--fault-injection', 'enable POST /v1/_faults (tests only; never in a real deployment)')
    .option(
      '--database <url>',
      'run on a shared PostgreSQL database (prefer OH_HAI_HUB_DATABASE_URL; a password belongs in PGPASSFILE or the environment, never argv)',
    )
    .option('--admin-listen <host:port>', 'serve /healthz, /readyz and /metrics (unauthenticated) on this address; off by default, never the public port')
    .option('--log-format <text|json>', 'text (default) or one JSON object per line, with a record per request')
    .option(
      '--trust-proxy <addrs>',
      "the proxies in front (addresses or CIDR ranges, comma-separated; or OH_HAI_HUB_TRUST_PROXY): from them, X-Forwarded-For names the client for logs and the sign-in throttle; otherwise it is the socket's peer",
    )
    .option('--no-agent-directory', 'advertise no account.agent_directory and refuse it to agent tokens (plays a Hub before 0.12.2)')
    .action(async (opts: ServeFlags) => {
      const { runServe } = await import('./run.js');
      host.finish('oh-hai hub serve', await runServe(opts, host.io));
    });

  const agent = hub.command('agent').description('mint, list and revoke agents');
  adminFlags(agent.command('add').description('mint an agent and print its token (shown once)').argument('<label>', 'a name people recognise')).action(
    async (label: string, opts: AdminFlags) => {
      const { runAgentAdd } = await import('../../hub-admin.js');
      host.finish('oh-hai hub agent add', await runAgentAdd(label, opts, host.io));
    },
  );
  adminFlags(agent.command('ls').description('list the account agents and the configured identities')).action(async (opts: AdminFlags) => {
    const { runAgentLs } = await import('../../hub-admin.js');
    host.finish('oh-hai hub agent ls', await runAgentLs(opts, host.io));
  });
  adminFlags(agent.command('revoke').description('revoke an agent: its token stops working').argument('<id>', 'agent id')).action(
    async (id: string, opts: AdminFlags) => {
      const { runAgentRevoke } = await import('../../hub-admin.js');
      host.finish('oh-hai hub agent revoke', await runAgentRevoke(id, opts, host.io));
    },
  );

  adminFlags(
    hub
      .command('directive')
      .description('send a directive from the human to an agent (its label, or agent:<id>) or one run (agent:<id>#sess_…)')
      .requiredOption('--to <agent>', "an agent's label (looked up in the directory), agent:<id> or agent:<id>#<session id>")
      .argument('<text...>', 'the directive: one action, and what "done" looks like'),
  ).action(async (words: string[], opts: AdminFlags & { to: string }) => {
    const { runDirective } = await import('../../hub-admin.js');
    host.finish('oh-hai hub directive', await runDirective(opts.to, words.join(' '), opts, host.io));
  });

  const session = hub.command('session').description('the operator kill-switch');
  adminFlags(
    session
      .command('close')
      .description('close a session as the operator: its mail bounces and re-registering is refused until lifted')
      .argument('<id>', 'session id (sess_…)'),
  ).action(async (id: string, opts: AdminFlags) => {
    const { runOperatorClose } = await import('../../hub-admin.js');
    host.finish('oh-hai hub session close', await runOperatorClose(id, opts, host.io));
  });

  adminFlags(
    hub
      .command('lift')
      .description("lift operator stops so the agent may register again (all of the agent's stops unless narrowed)")
      .requiredOption('--agent <id>', 'agent id')
      .option('--client-key <k>', 'only the stop for this client_key')
      .option('--name <n>', 'only the stop for this session name'),
  ).action(async (opts: AdminFlags & { agent: string; clientKey?: string; name?: string }) => {
    const { runLift } = await import('../../hub-admin.js');
    host.finish('oh-hai hub lift', await runLift(opts, host.io));
  });

  adminFlags(hub.command('messaging').description('switch agent messaging on or off for the account').argument('<state>', 'on or off')).action(
    async (state: string, opts: AdminFlags) => {
      const { runMessaging } = await import('../../hub-admin.js');
      host.finish('oh-hai hub messaging', await runMessaging(state, opts, host.io));
    },
  );
};
