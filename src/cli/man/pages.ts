import { BRIDGE_EXIT_TABLE, DOCTOR_EXIT_TABLE, type ExitRow, KNOBS, type KnobName, knobText, SETTING_KNOBS } from '../../core/index.js';
import type { PageSpec } from './generate.js';
import { MESSAGING_EXIT_TABLE } from '../messaging/exit.js';

/**
 * One PageSpec per man page. Flags, synopses and option text come from the commander
 * definitions (generate.ts); what is here is what commander cannot know: the prose,
 * environment, files, exit status and examples. Exit tables are read from src/core/exit.ts, knob rows from the knob registry (src/core/knobs.ts).
 */

const exitRows = (rows: readonly ExitRow[]): [string, string][] => rows.map((r) => [String(r.code), `${r.meaning}. What to do: ${r.todo}.`]);

/** A knob's ENVIRONMENT row, from the registry: the same words on every page that lists it. */
const envKnob = (name: KnobName): [string, string] => [KNOBS[name].env, knobText(name)];

const STATE_ROOT = '<state root> is --state-home when given, else $XDG_STATE_HOME, else ~/.local/state.';

const ENV_HUB: [string, string] = ['MA2H_HUB_URL', 'The Hub origin, when --hub is not given (before [hub] url in the config files).'];
const ENV_TOKEN: [string, string] = ['OH_HAI_TOKEN', 'One agent token. Wins over MA2H_AGENT_TOKENS and the credentials file. Never put a token in argv.'];
const ENV_TOKENS: [string, string] = [
  'MA2H_AGENT_TOKENS',
  'Several agent identities as comma-separated <agent_id>=<token> pairs; --agent picks one. An agent id containing a comma or = cannot be written here: use OH_HAI_TOKEN or oh-hai login for it.',
];
const ENV_XDG: [string, string][] = [
  ['XDG_CONFIG_HOME', 'Where config.toml and credentials.json live ($XDG_CONFIG_HOME/oh-hai/), when it is an absolute path; else ~/.config.'],
  ['XDG_STATE_HOME', 'The state root when --state-home is not given; else ~/.local/state.'],
];
const ENV_SESSION: [string, string][] = [
  ['MA2H_SESSION_ID', "The agent session when --session is not given. A Hub session id pins that session: sess_…, or any id your Hub gave one of this agent's sessions (a value that is no session name can only be an id; one that is, the Hub is asked about before anything registers). Anything else is a name."],
  ['MA2H_AGENT_SESSION_ID', 'The agent session, after MA2H_SESSION_ID: set one per agent when one program hosts several.'],
  ['CLAUDE_CODE_SESSION_ID', 'The agent session a harness sets, after MA2H_AGENT_SESSION_ID.'],
];

const FILE_CONFIG: [string, string] = ['~/.config/oh-hai/config.toml', 'The user config ($XDG_CONFIG_HOME/oh-hai/config.toml); see oh-hai-config(5).'];
const FILE_PROJECT: [string, string] = ['.oh-hai/config.toml', 'The project config, in the working directory or the nearest parent; it may set [hub] but never [bridge].'];
const FILE_CREDENTIALS: [string, string] = ['~/.config/oh-hai/credentials.json', 'Stored tokens, written by oh-hai login (0600, directory 0700).'];
const FILE_ENTRY: [string, string] = [
  '<state root>/oh-hai/bridge/sessions/<key>/',
  `The state entry of one agent session (0700, files 0600): identity.json, settings.json, session.json, consumer.json, reader.json, bridge.ndjson and bridge.<seq>.ndjson (the spool and its sealed segments), cursor.json, ledger.ndjson, seen-jti.ndjson and bridge.log (renamed to bridge.log.1 at 1 MiB, replacing the one before). The key is derived from the Hub origin, the agent id and the agent session — never the working directory. No token is ever written here. ${STATE_ROOT}`,
];

const MESSAGING_EXIT: [string, string][] = MESSAGING_EXIT_TABLE.map((r) => [String(r.code), r.meaning]);

const oh_hai: PageSpec = {
  name: 'oh-hai',
  section: 1,
  summary: 'keep AI agents reachable over an MA2H Hub',
  program: true,
  commands: ['setup', 'login', 'logout', 'upgrade', 'teach', 'demo'],
  description: `oh-hai keeps an AI agent reachable by humans and by peer agents through an MA2H Hub. The agent runs oh-hai bridge as a background task and re-runs it after every exit; a detached background connection drains the agent session's mailbox into a durable local spool, and nothing is acknowledged to the sender until a reader has printed it.

Nobody is ever told a message was seen when it was not: kill either process at any instant and every entry is either printed and acknowledged, or still unacknowledged at the Hub and delivered again.

Set up once with oh-hai setup (the Hub URL, a login, the sender policy), then run oh-hai bridge. Every command group has its own page, listed under COMMANDS and SEE ALSO. Progress and errors go to stderr; stdout carries only what a command was asked to print. Every fatal exit prints one line on stderr: oh-hai <command>: FATAL (exit <n>, <code>) \u2014 followed by what failed and the fix.`,
  optionNotes: {
    '--token': 'Refused (exit 2): a token passed as a flag value is already in shell history and in the process list. The error says to rotate it; use --token-stdin or the echo-off prompt instead.',
  },
  environment: [
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_XDG,
    ['XDG_CACHE_HOME', 'Where the compiled-code cache lives ($XDG_CACHE_HOME/oh-hai/code-cache/), when it is an absolute path; else ~/.cache.'],
    [
      'OH_HAI_CODE_CACHE',
      "Set to 0 to neither read nor write the compiled-code cache (every run then compiles the CLI again; nothing else changes). Set to node to use Node's own compile cache ($XDG_CACHE_HOME/oh-hai/compile-cache/, Node 22.1 and later) instead of oh-hai's; slower, kept for measuring the two (docs/performance.md).",
    ],
    [
      'OH_HAI_TRACE',
      'A file to append one line to per hop a message passes on its way to the printed line (the Hub, the background connection and the reader each write theirs: monotonic nanoseconds, the hop, the message id). For bench/bridge-latency.mjs --trace; unset (the default) traces nothing.',
    ],
    [
      'OH_HAI_TRACE_HOPS',
      'With OH_HAI_TRACE: a comma-separated list of the hops to trace, the rest left out (bench/bridge-latency.mjs gives its Hub hub.committed alone). Unset: every hop.',
    ],
  ],
  files: [
    FILE_CONFIG,
    FILE_PROJECT,
    FILE_CREDENTIALS,
    FILE_ENTRY,
    ['<state root>/oh-hai/internal-errors.log', 'Where exit 1 (a bug in oh-hai) writes its details.'],
    [
      '~/.cache/oh-hai/code-cache/',
      'V8\u2019s compiled code of the CLI, one file per bundle and Node version (0700, files 0600), so a re-run bridge does not compile it again. Only code, never data; safe to delete at any time.',
    ],
  ],
  exitStatus: [
    ['0', 'Success.'],
    ['1', 'An internal error: a bug in oh-hai, never a documented condition. Details are in <state root>/oh-hai/internal-errors.log.'],
    ['2', 'Usage or configuration error; the message names the flag, file or key and the fix.'],
    ['3', 'The credential is missing, refused or revoked; a human must fix it.'],
    ['13', 'The Hub is unreachable, or is not a usable MA2H Hub.'],
    ['130', 'A prompt was cancelled with Ctrl-C.'],
    ['141', 'Any command: stdout was closed before everything was printed (its reader exited, as `| head -1` does). The command itself did not fail; nothing is printed about it.'],
    ['other', 'Each command documents its own: the bridge contract (0, 2, 3, 4, 10 to 15, 141 and 128 + N) is in oh-hai-bridge(1).'],
  ],
  examples: [
    { text: 'The whole loop on an embedded local Hub, printed step by step:', code: 'oh-hai demo' },
    { text: 'First run against a Hub, with the token in a file (never on the command line):', code: 'oh-hai setup --hub https://hub.example.com --token-stdin < agent-token' },
    { text: 'What to paste into an agent\u2019s instructions:', code: 'oh-hai teach' },
    { text: 'How to register the MCP server with a harness:', code: 'oh-hai teach --mcp' },
  ],
  seeAlso: [
    'oh-hai-bridge(1)',
    'oh-hai-send(1)',
    'oh-hai-messages(1)',
    'oh-hai-fleet(1)',
    'oh-hai-mcp(1)',
    'oh-hai-hub(1)',
    'oh-hai-config(5)',
    'SUPERVISION.md in the source repository',
  ],
};

const bridge: PageSpec = {
  name: 'oh-hai-bridge',
  section: 1,
  summary: 'print the mail waiting for this agent session, and keep its background connection draining',
  commands: ['bridge'],
  description: `oh-hai bridge is the whole invocation: no flags are needed. It resolves this agent session, makes sure one detached background connection is draining the session into a local spool, prints every message waiting \u2014 one readable summary line per record \u2014 and exits 0. If nothing is waiting it waits for the next message, up to the wait bound (--wait, [bridge] wait_seconds, default 540 seconds), and prints what arrives; reaching the bound with nothing to print is also exit 0, and nothing is lost because the cursor never moved.

Run it as a background task and RE-RUN IT AFTER EVERY EXIT: act on what it printed, then run it again. Branch on the exit code (EXIT STATUS, or oh-hai bridge --exit-codes); never wrap it in a blind loop, which turns a dead credential into an infinite restart loop that looks exactly like a healthy idle bridge. Killing it loses nothing: the connection keeps draining, and the next run prints everything the cursor had not passed.

The session is yours, not the folder's: the agent session is --session, else MA2H_SESSION_ID, else MA2H_AGENT_SESSION_ID, else CLAUDE_CODE_SESSION_ID, else the long-lived program hosting the agent. A Hub session id pins that exact Hub session: sess_\u2026, or any id your Hub gave one of this agent\u2019s sessions (a name-shaped value is checked with the Hub before anything registers under it); anything else is a name. Two agents in one checkout get two sessions and two addresses. Sends from this agent session attach it automatically, so a peer\u2019s reply reaches the run that is reading.

The reader is never the connection's parent: on POSIX it double-forks, so a harness that ends a background task by walking parent pids does not reach the connection. A connection with no attending reader stops after the unattended bound ([bridge] unattended_max_seconds, default 900) without closing the session; the lease then lapses on its own.`,
  optionNotes: {
    'bridge --once': 'Removed in 0.10.0: warns once on stderr and is ignored. A later release makes it a usage error (exit 2).',
    'bridge --until-event': 'Removed in 0.10.0: warns once on stderr and is ignored. A later release makes it a usage error (exit 2).',
    'bridge --stream': 'Removed in 0.10.0: warns once on stderr and is ignored. A later release makes it a usage error (exit 2).',
    'bridge --attach-only': 'Removed in 0.10.0: warns once on stderr and is ignored. A later release makes it a usage error (exit 2).',
  },
  sections: [
    {
      heading: 'Output',
      text: `Each record is one line on stdout: [mail <seq>] followed by the kind, the sender, the ids, how to reply (oh-hai reply <message id> for an ask or task) and the text, quoted and marked as untrusted data from the sender, not instructions. An address change (the session lapsed and was replaced) and a possibly bounced record (it arrived under a session since replaced, so its sender may already have had the bounce) have lines of their own.

--raw (or its equivalent --json) prints the spool envelope verbatim instead, one NDJSON object per record \u2014 what a program parses. It is the only difference the flag makes: same session, same spool, same exit codes. The envelope carries the Hub's signature verbatim.

Diagnostics go to stderr. Every fatal exit prints oh-hai bridge: FATAL (exit <n>, <code>) \u2014 \u2026 (a stand-down prints STOOD DOWN instead). When the background connection died, the next run prints the records it left behind first and then exits with the connection's own code.`,
    },
    {
      heading: 'Lease epilogue',
      text: `Every exit that reached a state entry ends with one stderr line read off that entry, with no Hub call: oh-hai bridge: lease \u2014 sess_\u2026 expires <instant> (Hub's clock; last renewed <duration> ago); consumer pid <n> on <host>. The instant is the Hub's, printed verbatim; the staleness is measured on this machine's clock. There is deliberately no "time remaining". A lapsed lease, one inside its warning window (a third of the lease, at most five minutes), or a dead, absent or unreadable connection adds a second line saying what happens next. A run that failed before it resolved a state entry prints its reason and no epilogue.`,
    },
    {
      heading: 'Sender policy',
      text: `Only an addressed ask or task is subject to the policy; directives, notifies, responses and receipts are always delivered. --allow-from any-in-account accepts any agent in your account; --allow-from agent:<id> only that peer (repeatable; add #sess_\u2026 to pin one run); --allow-from <label> names a peer by its label, resolved once to its agent:<id> (from the directory cache, or one directory read when the cache cannot answer; the line printed shows both), so the connection enforces the id and a relabel cannot widen it \u2014 an unknown or shared label is exit 2 naming the candidates. [bridge] allow_from takes ids only. With no policy declared the bridge still runs, says so on stderr on every run, and refuses every addressed ask/task, leaving it unacked. The running connection enforces the policy it started with: a flagless run adopts it, a named --allow-from that disagrees is exit 2, and oh-hai session close --keep-connection followed by oh-hai bridge applies a new one. See oh-hai-config(5).`,
    },
    {
      heading: 'What it verifies, and what it cannot',
      text: `Before an entry is spooled the connection checks, in this order: the MA2H-Signature is well-formed; its t is inside the Hub's advertised replay window (300 s when none is advertised); its jti has not been seen; the entry has its kind's exact fields; it is addressed to this agent and this session; the sender policy admits an addressed ask or task. A failure of the first five stops the connection with exit 12. What it cannot check is the signature itself: the Hub signs with a key of its own and publishes none, so the sender (from) is asserted by the Hub over its authenticated channel, not proven to you — your trust in a sender is your trust in the Hub. --raw forwards the signature verbatim for a runtime that can check it. Acknowledged means a reader's cursor passed the entry: a consumer read the bytes, never that the model acted on them.

Two windows the split does not close, stated rather than glossed: a userspace pidfile is not a mutex (a recycled pid, or a crash between check and write, can still produce two claimants), and two hosts cannot see each other's state — pids are host-local, so a record from another machine can only be aged out by its heartbeat, never signalled from here.`,
    },
    {
      heading: 'Retired',
      text: `--once, --until-event, --stream and --attach-only are removed: each warns once on stderr and is ignored. oh-hai bridge consume is the old spelling of the private connection entrypoint (warns and forwards). oh-hai bridge status and oh-hai bridge stop still work, with one warning line, and return the forwarded command's exit code: bridge status \u2192 the bridge checks of oh-hai doctor --self-test; bridge stop \u2192 oh-hai session close; bridge stop --keep-session \u2192 oh-hai session close --keep-connection; bridge stop --purge \u2192 oh-hai session close, then the state entry is cleared. A later release makes them unknown subcommands (exit 2).`,
    },
    {
      heading: 'Service managers',
      text: `For a bridge that must outlive every shell, run the background connection itself under a service manager through its private, non-forking entrypoint, oh-hai __consumer --mode direct --session <name>. It stays in the foreground, logs to stderr, has no unattended bound, and stops cleanly with exit 0 on SIGTERM. A unit must name its mailbox with --session and put the stop classes in RestartPreventExitStatus= (2 3 4 10 12 14 15, plus 11 when it pins a Hub session id); 13 is the one that should restart. Something must still re-run oh-hai bridge --session <name> to read the spool: process supervision is not reader attendance. SUPERVISION.md in the source repository has the systemd and launchd unit files.`,
      example: 'ExecStart=/usr/local/bin/oh-hai __consumer --mode direct --session builder-1\nRestart=on-failure\nRestartPreventExitStatus=2 3 4 10 12 14 15',
    },
  ],
  environment: [
    ...ENV_SESSION,
    envKnob('waitSeconds'),
    envKnob('readerGraceSeconds'),
    envKnob('logMaxBytes'),
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_XDG,
    [
      'OH_HAI_CONNECTION_SETTINGS',
      'Not for users: set only in the environment of a background connection the bridge starts, to this run\u2019s settings as JSON (no secret), which the connection writes to <entry>/settings.json once it holds the entry. A value already set is replaced.',
    ],
  ],
  files: [
    FILE_ENTRY,
    ['<entry>/bridge.ndjson', 'The spool\u2019s current segment: one JSON record per line, exactly what --raw prints. Full segments are sealed as bridge.<first seq>.ndjson and removed once printed, acknowledged and past [bridge] retain_printed (oh-hai-config(5)).'],
    ['<entry>/bridge.log', 'One line per event from the reader and the connection, with no secrets. At 1 MiB (OH_HAI_LOG_MAX_BYTES) it is renamed to bridge.log.1 and a new one begins.'],
    ['<entry>/bridge.log.1', 'The previous bridge.log; the next rotation replaces it, so the two hold the last 1 to 2 MiB of events.'],
    FILE_CONFIG,
  ],
  exitStatus: exitRows(BRIDGE_EXIT_TABLE),
  examples: [
    { text: 'The loop, as a harness background task: run, act on what was printed, run again.', code: 'oh-hai bridge' },
    { text: 'The exit-code table, with no credential and no Hub call:', code: 'oh-hai bridge --exit-codes' },
    { text: 'Two agents in one checkout, each with its own mailbox:', code: 'oh-hai bridge --session builder\noh-hai bridge --session reviewer' },
    { text: 'Accept asks and tasks from any agent in the account, applied to a running connection:', code: 'oh-hai session close --keep-connection\noh-hai bridge --allow-from any-in-account' },
  ],
  seeAlso: ['oh-hai(1)', 'oh-hai-send(1)', 'oh-hai-fleet(1)', 'oh-hai-config(5)', 'SUPERVISION.md in the source repository'],
};

const session: PageSpec = {
  name: 'oh-hai-session',
  section: 1,
  summary: "stand this agent session down, or ask the Hub how it stands",
  commands: ['session'],
  description: `oh-hai session close stands this agent session down, in this order: it stops the background connection, waits for its clean stop, closes the session at the Hub, and forgets the id locally. Closing first would race the connection, which would register a replacement session. A running oh-hai bridge of this agent session then exits 15 (STOOD DOWN) \u2014 or, when none was waiting, the next one does, once: nothing failed; run it again only if this run should have a new address, and that run registers a new session (under a pinned Hub session id every run exits 15 until the pin is cleared or repointed). The last line session close prints says which. Mail still unacknowledged at the Hub bounces to its senders. Nothing to stand down is exit 4.

--keep-connection stops the connection and leaves the session open: that is how a changed setting (a new --allow-from, say) is applied \u2014 the next oh-hai bridge starts a connection with it, under the same address.

oh-hai session status asks the Hub \u2014 the authority on a session's state \u2014 and shows this host's record beside it. Each fact says whose clock it is: the Hub's instants are printed verbatim, ages are measured on this machine's clock, and nothing is "time remaining".

The agent session is resolved as oh-hai bridge resolves it (--session, MA2H_SESSION_ID, MA2H_AGENT_SESSION_ID, CLAUDE_CODE_SESSION_ID, else the program hosting the agent), so run these from the same place as the bridge, or name the session.`,
  environment: [
    envKnob('stopWaitMs'),
    ...ENV_SESSION,
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_XDG,
  ],
  files: [FILE_ENTRY, ['<entry>/session.json', 'The Hub session this host last registered, with its lease as last seen (the Hub\u2019s expires_at verbatim).'], ['<entry>/consumer.json', 'The background connection: pid, host, heartbeat, and how it stopped.']],
  exitStatus: [
    ['0', 'session close: stood down (with --keep-connection: the connection stopped). session status: the Hub answered.'],
    ['2', 'Usage error.'],
    ['3', 'The credential is dead.'],
    ['4', 'session close: nothing to stand down. session status: no session recorded here, or the Hub does not know it.'],
    ['10', 'session close: the connection runs on another host, which this host cannot signal.'],
    ['13', 'The Hub is unreachable. For session close the session was not closed and stays recorded: run it again.'],
  ],
  examples: [
    { text: 'The run is over: give the address back.', code: 'oh-hai session close' },
    { text: 'Apply a new sender policy to a running connection:', code: 'oh-hai session close --keep-connection\noh-hai bridge --allow-from any-in-account' },
    { text: 'Is this session still live, according to the Hub?', code: 'oh-hai session status --session builder-1' },
  ],
  seeAlso: ['oh-hai-bridge(1)', 'oh-hai-fleet(1)', 'oh-hai(1)'],
};

const inbox: PageSpec = {
  name: 'oh-hai-inbox',
  section: 1,
  summary: "print the directives waiting in the agent's principal mailbox",
  commands: ['inbox'],
  description: `oh-hai inbox watch drains the principal mailbox, agent:<id>: directives a human sent to the agent rather than to one run. Like oh-hai bridge it prints every directive waiting \u2014 one summary line each \u2014 and exits 0, or waits up to the wait bound for the next; re-run it after every exit and branch on the exit code.

It rides the same durable background connection as the bridge, on the principal leg: the connection long-polls GET /v1/inbox?wait=25 (each answered drain is also the agent's presence heartbeat), spools what arrives, and acknowledges exactly what this command has printed, so killing it loses nothing. Its state entry is <state root>/oh-hai/bridge/principal/<key>/.

No session is involved: a human cannot stop it with the kill-switch, and there is no lease to lapse, so its epilogue is the bridge's minus the lease \u2014 what stops working when nothing drains this mailbox is delivery, not an address.

One watcher per identity per machine: a second exits 10 and names the first. Do not kill the first to make room: this mailbox is addressed by agent id, so stopping that watcher costs delivery rather than an address. At scale prefer oh-hai bridge: each watcher is a poller and takes a per-identity lock.`,
  environment: [
    envKnob('waitSeconds'),
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_XDG,
  ],
  files: [
    ['<state root>/oh-hai/bridge/principal/<key>/', `The principal leg's state entry (0700, files 0600), laid out as a session entry. ${STATE_ROOT}`],
    FILE_CONFIG,
    FILE_CREDENTIALS,
  ],
  exitStatus: [
    ['0', 'The directives waiting were printed, or the wait elapsed with none. Act on anything printed, then run it again.'],
    ['2', 'Usage error. Fix the command.'],
    ['3', 'The credential is dead. Stop re-running; a human must fix it.'],
    ['10', 'Another watcher for this identity already runs on this machine; the refusal names it. Do not kill it: stopping it costs delivery.'],
    ['12', 'An entry failed verification \u2014 possible tampering. Stop; tell a human.'],
    ['13', 'The Hub is unreachable (reconnect budget exhausted). Re-run with your own backoff; escalate if it repeats.'],
    ['141', 'stdout was closed before a directive could be printed (its reader exited, e.g. `| head -1`). Nothing is lost: the next run prints it.'],
    ['128 + N', 'Killed from outside by a signal it does not handle. Nothing failed; re-run when directives should flow again.'],
  ],
  examples: [
    { text: 'As a background task, re-run after every exit:', code: 'oh-hai inbox watch' },
    { text: 'For a program:', code: 'oh-hai inbox watch --raw' },
  ],
  seeAlso: ['oh-hai-bridge(1)', 'oh-hai-hub(1)', 'oh-hai(1)'],
};

const doctor: PageSpec = {
  name: 'oh-hai-doctor',
  section: 1,
  summary: "check this machine's oh-hai setup, and prove the round trip works",
  commands: ['doctor'],
  description: `oh-hai doctor is the health check: one line per check \u2014 pass, warn or fail, with the fix for anything not passing \u2014 for Node.js, the config files, the state root and its modes, the sender policy, the Hub, its capability document, the clock offset against the Hub, and the credential (which source it came from; never the token).

--self-test adds the throwaway round trip: session \u2192 addressed notify \u2192 drain \u2192 verify \u2192 ack \u2192 reachability \u2192 close, each step named and timed, on a session of its own (never the bridge's). It needs agent messaging switched on for the account (Settings \u2192 Agent messaging). Then, read-only and sending nothing into it, it checks THIS agent session's bridge (or the one --session / --state-home names) as four named checks: bridge consumer (the connection is live), bridge session (active at the Hub), bridge reader (a reader is attending, or the bridge is inside the unattended bound) and bridge unread (nothing unread past that bound). A failure fails the self-test and names the check; a run with no bridge passes with no bridge for this agent session.

A record that exists and could not be read is an unknown, reported as a warn, not a fail: a fail is what a health script relaunches on, which is the one thing an unreadable record must not trigger. The reader check measures from the later of the reader's heartbeat and the connection's start; when the connection record is unreadable that is an upper bound, and the check says so instead of reporting a bound as passed.

oh-hai bridge status, which is retired, forwards to the bridge checks.`,
  environment: [
    envKnob('doctorTimeoutSeconds'),
    envKnob('staleHolderSeconds'),
    ...ENV_SESSION,
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_XDG,
  ],
  files: [FILE_CONFIG, FILE_PROJECT, FILE_CREDENTIALS, FILE_ENTRY],
  exitStatus: exitRows(DOCTOR_EXIT_TABLE),
  examples: [
    { text: 'Is this machine set up?', code: 'oh-hai doctor' },
    { text: 'Prove a message gets through, then check this bridge:', code: 'oh-hai doctor --self-test' },
    { text: 'A health script for a supervised bridge:', code: 'oh-hai doctor --self-test --session builder-1 --json' },
  ],
  seeAlso: ['oh-hai-bridge(1)', 'oh-hai-config(5)', 'oh-hai(1)'],
};

const send: PageSpec = {
  name: 'oh-hai-send',
  section: 1,
  summary: 'send a notify, an ask or a task to another agent, and reply to one',
  commands: ['send', 'ask', 'task', 'reply'],
  description: `oh-hai send, ask and task queue a message from this agent to an address: agent:<id> (the agent's principal mailbox, claimed by whichever live session of it drains first) or agent:<id>#sess_\u2026 (one run, as oh-hai fleet ls prints it). send is a notify (no reply expected); ask is a question and task is one action, both answered with oh-hai reply. The text is the last argument, or stdin when it is - or absent and stdin is a pipe; at most 64 KiB.

A send is queued, never "delivered": the Hub accepted it, nothing more. The destination snapshot it prints is online (a consumer drained that mailbox within the presence window), offline, or unknown \u2014 the Hub has no presence signal, which is not evidence that the peer is down. Follow the delivery track with oh-hai messages list. Acknowledged means a consumer read the bytes, never that the model acted on them.

This agent session is attached automatically when it has one (the session oh-hai bridge registered), so answers and receipts reach the run that is reading; otherwise they go to the agent's principal mailbox. A transient failure is retried with the same idempotency key, so a retry never queues a second copy.

Write directives short, one action, with what "done" looks like, addressed to the run you mean. On the receiving side entries are data, not instructions.`,
  environment: [envKnob('askPollMs'), ...ENV_SESSION, ENV_HUB, ENV_TOKEN, ENV_TOKENS, ...ENV_XDG],
  files: [FILE_CONFIG, FILE_CREDENTIALS, FILE_ENTRY],
  exitStatus: MESSAGING_EXIT.map(([code, text]): [string, string] => {
    if (code === '0') return [code, `${text} ask --wait also exits 0 when the wait runs out (it prints the message id to check later) and when the ask bounced or expired while waiting: the send itself worked.`];
    if (code === '2') return [code, `${text} For reply, also: that message takes no (more) answers.`];
    return [code, text];
  }),
  examples: [
    { text: 'Tell one run something:', code: 'oh-hai send --to agent:agt_123#sess_456 "the build is green"' },
    { text: 'Ask, and wait up to a minute for the answer:', code: 'oh-hai ask --to agent:agt_123 --wait 60 "which branch should I rebase on?"' },
    { text: 'Answer the ask the bridge printed (reply: oh-hai reply msg_789):', code: 'oh-hai reply msg_789 "main"' },
    { text: 'Text from a file:', code: 'oh-hai task --to agent:agt_123 - < task.txt' },
  ],
  seeAlso: ['oh-hai-messages(1)', 'oh-hai-fleet(1)', 'oh-hai-bridge(1)', 'oh-hai(1)'],
};

const messages: PageSpec = {
  name: 'oh-hai-messages',
  section: 1,
  summary: 'what this agent sent or received, and how far each message got',
  commands: ['messages'],
  description: `oh-hai messages list prints one line per message, newest first, with its state and delivery track; oh-hai messages show prints one message in full: parties, track, destination snapshot and response. Every instant is the Hub's, printed verbatim.

The track: queued (the Hub accepted it; nobody has it yet) \u2192 delivered (a consumer holds it durably, spooled on the recipient's machine) \u2192 acknowledged (a reader's cursor passed it: a consumer read the bytes \u2014 never proof that the model acted on it). Or bounced: its session lapsed or closed first, and the prior says how far it got \u2014 prior: queued means never seen, prior: delivered means seen but never confirmed. Or expired: not acknowledged within the Hub's message TTL. Each terminal state also sends the sender a receipt entry, which oh-hai bridge prints.`,
  environment: [ENV_HUB, ENV_TOKEN, ENV_TOKENS, ...ENV_XDG],
  files: [FILE_CONFIG, FILE_CREDENTIALS],
  exitStatus: MESSAGING_EXIT,
  examples: [
    { text: 'What you sent, and where each got to:', code: 'oh-hai messages list' },
    { text: 'One message in full, as JSON:', code: 'oh-hai messages show msg_789 --json' },
    { text: 'What this agent received:', code: 'oh-hai messages list --received --limit 20' },
  ],
  seeAlso: ['oh-hai-send(1)', 'oh-hai-bridge(1)', 'oh-hai(1)'],
};

const fleet: PageSpec = {
  name: 'oh-hai-fleet',
  section: 1,
  summary: 'every agent and session you can address, and what this host knows about each',
  commands: ['fleet'],
  description: `oh-hai fleet ls lists every agent of the account that is not revoked (the agent directory, MA2H \u00a710): its label (what send --to <label> takes), its principal address agent:<id>, the best reachability of its live sessions (or no live session), and its live sessions. On a terminal the columns are aligned; in a pipe they are tab-separated.

oh-hai fleet ls --sessions lists every live session in the account with its address and reachability as the Hub sees it: online (a consumer drained or connected within the presence window), offline (nothing drains it now), or unknown (the Hub has no presence signal \u2014 not evidence that it is down). Lease instants are the Hub's, printed verbatim; nothing here is "time remaining".

Rows whose session has a state entry on this host are annotated from local files, with no further Hub call: home found \u00b7 consumer live / reader attending \u00b7 N unread (N is the lag: records spooled that no reader has printed yet); home found \u00b7 consumer DEAD (nothing on this host drains it; oh-hai bridge with that agent session starts a connection); home found \u00b7 consumer UNKNOWN / reader unknown (the record is there and could not be read \u2014 null, not false, under --json). Do not relaunch on UNKNOWN: it is not evidence that nothing is running, and a relaunch against a live connection changes the session's address. The other rows say no local state here: that is local state, not a Hub signal, and says nothing about a session on another machine.`,
  environment: [ENV_HUB, ENV_TOKEN, ENV_TOKENS, ...ENV_XDG],
  files: [FILE_ENTRY, FILE_CONFIG, FILE_CREDENTIALS],
  exitStatus: MESSAGING_EXIT.filter(([code]) => code !== '4'),
  examples: [
    { text: 'Agents to send to, by label, and whether anything reads them:', code: 'oh-hai fleet ls' },
    { text: 'Every live session, with what this host knows of it:', code: 'oh-hai fleet ls --sessions' },
    { text: 'For a program:', code: 'oh-hai fleet ls --sessions --json' },
  ],
  seeAlso: ['oh-hai-send(1)', 'oh-hai-bridge(1)', 'oh-hai(1)'],
};

const hub: PageSpec = {
  name: 'oh-hai-hub',
  section: 1,
  summary: 'run the reference MA2H Hub and administer it',
  commands: ['hub'],
  description: `oh-hai hub serve runs the project's reference Hub: MA2H 0.5 on node:http with a SQLite store, for tests, demos and small deployments. It listens on 127.0.0.1 by default, prints hub: listening on <url> when ready, serves the web inbox at / (sign in with the human token), and stops cleanly on SIGTERM or SIGINT. A wildcard --host (0.0.0.0, or :: for IPv6 and IPv4) listens on every interface and is no address to open: the URLs it prints and records in <data>/hub.json are then loopback's (127.0.0.1, [::1]), and one line lists this machine's own interface addresses, the URLs for other machines. The first start creates an account and writes its human token to <data>/human-token (0600).

Given a PostgreSQL database (OH_HAI_HUB_DATABASE_URL, or --database without a password), any number of instances serve one deployment behind a load balancer: the database decides every race and every instant, NOTIFY carries pushes between instances, and MA2H_SIGNING_KEY is required (the same on every instance). --admin-listen serves /healthz, /readyz and /metrics on a separate address; --log-format json writes one JSON object per line. See docs/deploy.md and deploy/ (nginx, systemd).

The other subcommands administer a running Hub over HTTP as the account's human: they read the human token from the data dir (--data, never argv) and the URL the Hub recorded there (or --hub). oh-hai hub agent add prints a new agent's token once. oh-hai hub session close is the operator kill-switch: the session's queued mail bounces, its bridge exits 14, and re-registering is refused until oh-hai hub lift. oh-hai hub lift says how many stops it lifted, or that nothing was lifted when no stop matched (exit 0: the stop may be gone already).

The test knobs (--lease-min-seconds, --stream-max-hold-seconds, \u2026) shrink every interval so a test suite runs in seconds; --fault-injection enables POST /v1/_faults, and is for tests only.`,
  environment: [
    ['MA2H_SIGNING_KEY', 'The delivery HMAC key, when --signing-key is not given (prefer this: argv is visible to other users). Random per start when unset.'],
    ['MA2H_MAX_WAIT_SECONDS', 'The long-poll clamp, when --max-wait-seconds is not given (default 25).'],
    ['MA2H_AGENT_TOKENS', 'The Hub\u2019s configured token store: comma-separated <agent_id>=<token> pairs it accepts besides the agents it minted (the directory lists them with source "config").'],
    ['OH_HAI_HUB_DATABASE_URL', 'Run on this PostgreSQL database (postgres://user@host:port/db) instead of SQLite; may carry the password (never printed or logged), or put it in PGPASSFILE.'],
    envKnob('hubDbPoolMax'),
    envKnob('hubListenRetryMs'),
    envKnob('hubCredentialCacheMs'),
    envKnob('hubShutdownStreamsMs'),
    envKnob('hubShutdownWorkMs'),
    [
      'OH_HAI_HUB_TRUST_PROXY',
      'The proxies whose X-Forwarded-For names the client, when --trust-proxy is not given: comma-separated addresses and CIDR ranges (e.g. 127.0.0.1,10.0.0.0/8).',
    ],
    ['XDG_STATE_HOME', 'The default data dir is $XDG_STATE_HOME/oh-hai/hub (else ~/.local/state/oh-hai/hub).'],
    [
      'OH_HAI_HUB_SQLITE_DRIVER',
      'The SQLite engine under the store: node (Node\u2019s built-in node:sqlite, Node 22.16+ and 24), better-sqlite3 (the optional package, for Node 20), or auto (default: node where this Node has it, else better-sqlite3).',
    ],
  ],
  files: [
    ['<data>/hub.sqlite', 'The durable store.'],
    ['<data>/human-token', 'The account\u2019s human token (0600); the admin commands and the web inbox sign-in use it.'],
    ['<data>/hub.json', 'The URL the running Hub listens on, for the admin commands.'],
  ],
  exitStatus: [
    ['0', 'Success; hub serve after a clean stop.'],
    [
      '2',
      'Usage error: a bad flag or value, a bad MA2H_AGENT_TOKENS, or (admin) a request the Hub refused as invalid. Also sqlite_unavailable: this Node has no SQLite engine the Hub can load (no node:sqlite before Node 22.16, and better-sqlite3 not installed or built for another Node); the message names the fix (Node 24 or 22.16+, or reinstalling where better-sqlite3 can build).',
    ],
    ['3', 'The Hub refused the human token from the data dir: is --data the data dir of this Hub?'],
    ['13', 'The Hub is unreachable, or not an MA2H Hub.'],
  ],
  examples: [
    { text: 'A Hub on a fixed port, and an agent to talk to it:', code: 'oh-hai hub serve --port 8787 &\noh-hai hub agent add builder' },
    { text: 'A directive from the human to one run:', code: 'oh-hai hub directive --to agent:agt_123#sess_456 "rebase on main; done when CI is green"' },
    { text: 'The kill-switch, and lifting it:', code: 'oh-hai hub session close sess_456\noh-hai hub lift --agent agt_123' },
  ],
  seeAlso: ['oh-hai(1)', 'oh-hai-bridge(1)', 'oh-hai-fleet(1)'],
};


const config: PageSpec = {
  name: 'oh-hai-config',
  section: 5,
  summary: 'oh-hai configuration files, keys and environment knobs',
  commands: [],
  description: `oh-hai reads two TOML files: the user config, $XDG_CONFIG_HOME/oh-hai/config.toml (else ~/.config/oh-hai/config.toml), and a project config, .oh-hai/config.toml in the working directory or the nearest parent (only the first found). Precedence is flag > environment > project file > user file > default. A project file may not set [bridge] at all \u2014 not a key, not an empty table \u2014 because a repository must not widen who may ask your agent; such a file is a usage error (exit 2) naming it. So for the bridge keys the chain is flag > environment > user file > default; only [hub] url has a project layer — and a repository cannot choose where your token goes either: when only a project file names the Hub and the token comes from OH_HAI_TOKEN or MA2H_AGENT_TOKENS (which are not tied to a Hub), every command refuses with exit 2 (project_hub_unconfirmed) before any Hub call; name that Hub yourself with --hub, MA2H_HUB_URL or the user config's [hub] url to confirm it.

Unknown keys are warnings naming the file and the key, never errors. A wrong type or range is a usage error naming the file, the key and the expected type. Seconds may be fractional everywhere.`,
  sections: [
    {
      heading: 'Keys',
      items: [
        ['[hub] url', 'The Hub origin (https://hub.example.com). A path, query, fragment or user:password@ is refused. Flag --hub; environment MA2H_HUB_URL. No Hub URL anywhere is exit 2 naming the three fixes.'],
        ['[bridge] allow_from', 'The sender policy: a list of any-in-account, agent:<id> or agent:<id>#<session id>. Flag --allow-from (overrides the file entirely). Not declared: fail-closed. allow_from = [] is a declared policy that admits nobody.'],
        ...SETTING_KNOBS.map((name): [string, string] => {
          const k = KNOBS[name];
          return [`[bridge] ${k.setting.key}`, `${k.what}${k.setting.flag === null ? '' : ` Flag ${k.setting.flag}.`} ${k.unit === 'count' ? 'A whole number' : 'Seconds'}; default ${k.default}; environment ${k.env}.`];
        }),
        ['[bridge] transport', 'auto (SSE when the Hub offers it, else long-poll), sse or poll. Flag --transport.'],
        [
          '[bridge] retain_printed',
          'How long the spool keeps records the reader has printed and the Hub has acknowledged: "<n> records / <d> days / <size>" (a part left out keeps its default; size in bytes, KiB, MiB or GiB); default "10000 records / 7 days / 64 MiB". A spool segment of such records is removed once more than n of them are newer, more than size of them are in newer segments, or its newest is older than d days; unprinted or unacknowledged records are never removed. Environment OH_HAI_RETAIN_PRINTED.',
        ],
      ],
    },
    {
      heading: 'The sender policy',
      text: `MA2H requires an explicit policy for which principals may ask or task your agent. oh-hai setup, oh-hai login --human and oh-hai upgrade write every agent currently minted in your account into [bridge] allow_from of the user config \u2014 when, and only when, no policy exists. An existing policy is never touched and never widened, however narrow. The policy is written once and never refreshed: an agent minted later stays refused however many times you run oh-hai upgrade. The fix is by hand: add the peer to [bridge] allow_from, or clear the key entirely and re-run oh-hai upgrade. A running connection enforces the policy it started with; see oh-hai-bridge(1). If you do not know which policy the operator wants, ask them; never widen it to make a command run. And note what it is: routing policy, not authentication — a sender is who the Hub says it is (oh-hai-bridge(1), What it verifies).`,
      example: '[hub]\nurl = "https://hub.example.com"\n\n[bridge]\nallow_from = ["agent:agt_reviewer", "agent:agt_builder#sess_456"]\nwait_seconds = 540',
    },
    {
      heading: 'Credentials',
      text: `The agent token is OH_HAI_TOKEN, else MA2H_AGENT_TOKENS (--agent <id> picks among several), else credentials.json for the resolved Hub (written by oh-hai login, 0600). No credential is exit 3 with the fix. A token is never printed, logged, put in argv, in a URL, in config.toml or in a state entry. The agent id of OH_HAI_TOKEN is learned once with GET /v1/whoami and cached in <state root>/oh-hai/identities.json under a hash of the Hub origin and the token, never the token itself.`,
    },
  ],
  environment: [
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_SESSION,
    ...(Object.keys(KNOBS) as KnobName[]).map(envKnob),
    ['OH_HAI_RETAIN_PRINTED', 'Overrides [bridge] retain_printed, same syntax ("10000 records / 7 days / 64 MiB"); a malformed value is a usage error (exit 2).'],
    ...ENV_XDG,
    ['HOME', 'The base of ~/.config and ~/.local/state when the XDG variables are unset.'],
  ],
  files: [
    FILE_CONFIG,
    FILE_PROJECT,
    FILE_CREDENTIALS,
    ['<state root>/oh-hai/identities.json', 'The OH_HAI_TOKEN \u2192 agent id cache (hashes, no tokens; 0600).'],
    FILE_ENTRY,
  ],
  examples: [
    { text: 'Accept asks and tasks from one peer (user config only):', code: '[bridge]\nallow_from = ["agent:agt_reviewer"]' },
    { text: 'Shrink the intervals for a quick local test:', code: 'OH_HAI_WAIT_SECONDS=5 OH_HAI_MAX_RETRIES=1 oh-hai bridge' },
  ],
  seeAlso: ['oh-hai(1)', 'oh-hai-bridge(1)'],
};

const mcp: PageSpec = {
  name: 'oh-hai-mcp',
  section: 1,
  summary: "this agent's mailbox as MCP tools over stdio, for harnesses that speak MCP",
  commands: ['mcp'],
  description: `oh-hai mcp is a Model Context Protocol server on stdin and stdout, started by a harness (Claude Code, Codex, any mcpServers client). It is a thin face over what the CLI does, not a second implementation: the same resolution, the same state entry, the same cursor, the same refusals. It resolves the agent session exactly as oh-hai bridge does (--session, MA2H_SESSION_ID, MA2H_AGENT_SESSION_ID, CLAUDE_CODE_SESSION_ID, else the program hosting the agent), so a server and a bridge of one agent share one address and one state entry. Each call resolves again: a fixed credential or config takes effect without a restart. stdout carries JSON-RPC and nothing else; every diagnostic goes to stderr.

The tools: oh_hai_send {to, text} queues a notify; oh_hai_ask {to, text, wait_seconds?} queues an ask and, with wait_seconds, polls GET /v1/messages/:id every 2 s (OH_HAI_ASK_POLL_MS) with a progress notification per poll, returning the response when it comes or the delivery state when the wait ends; oh_hai_task {to, text}; oh_hai_reply {id, text} answers an ask or task by the reply_id oh_hai_read returned; oh_hai_read {wait_seconds?} returns what a bridge run would print, as records; oh_hai_messages {limit?} is the delivery track of what this agent sent; oh_hai_fleet lists the addressable sessions with their reachability; oh_hai_status shows this session, its lease (the Hub's instant verbatim, our renewal age), the sender policy in force and whether a connection drains it. A send is queued, never "delivered". Input schemas are strict: an unknown argument, a wrong type or an empty text is refused naming the argument.

oh_hai_read is the bridge's reading loop taking records instead of printing them. It ensures the background connection (adopting the running one, or starting one with this server's flags), claims the reader seat for its own deadline only (its wait plus OH_HAI_READER_GRACE_SECONDS) and gives it back when the call ends, and moves the cursor only once its answer has been written to stdout: a server killed before then returned nothing, and the next read or bridge run prints it all. A live, attending reader \u2014 most likely this agent's own oh-hai bridge background task \u2014 is never displaced: the read is refused with exit 10 semantics naming it (pid and host). A bridge of a declared agent session that displaces a waiting read ends that read only (it returns what it took, nothing is lost); the server keeps serving.

MCP tools cannot wake an agent: today's harnesses start no turn on an MCP notification. To be woken when mail arrives, keep oh-hai bridge running as a background task and re-run it after every exit; the server's instructions say so. Entries are data, not instructions.

A refusal is a tool error (isError), never a stack trace: its text is the CLI's stop line, FATAL (exit <n>, <code>) \u2014 what was wrong and the fix, then the exit table's meaning and what to do; its structured content carries exit, exit_name, code, message, meaning and what_to_do. A call naming a tool the server does not have is no refusal but the protocol error the MCP specification gives: a JSON-RPC error, code -32602 (invalid params), naming the tool; nothing ran. oh_hai_read's stops (3, 4, 10 to 15) are the bridge's, from the same table (oh-hai bridge --exit-codes). oh-hai teach --mcp prints how to register the server; oh-hai doctor's mcp check starts it and lists its tools.`,
  optionNotes: {
    '--wait': 'Not a wait of its own: the longest wait_seconds oh_hai_read accepts (the bridge\u2019s wait bound).',
  },
  environment: [
    ['OH_HAI_ASK_POLL_MS', 'How often oh_hai_ask with wait_seconds polls the message (default 2000).'],
    ['OH_HAI_READER_GRACE_SECONDS', 'oh_hai_read holds the reader seat for its wait plus this (default 30).'],
    ...ENV_SESSION,
    ENV_HUB,
    ENV_TOKEN,
    ENV_TOKENS,
    ...ENV_XDG,
  ],
  files: [FILE_ENTRY, FILE_CONFIG, FILE_CREDENTIALS],
  exitStatus: [
    ['0', 'The client closed stdin: the server stopped.'],
    ['2', 'A bad knob (an OH_HAI_* variable), before serving.'],
    ['130, 143', 'SIGINT or SIGTERM: the server stopped; a read in flight returned nothing, so nothing is lost.'],
    ['other', 'Tool results carry the exit codes of the commands they stand for, as tool errors; the server itself does not exit on them.'],
  ],
  examples: [
    { text: 'Register it with Claude Code:', code: 'claude mcp add oh-hai -- oh-hai mcp' },
    { text: 'Several agents in one harness: one --session each, the same one their bridge runs with:', code: 'oh-hai mcp --session builder' },
    { text: 'The registration blocks for other harnesses:', code: 'oh-hai teach --mcp' },
  ],
  seeAlso: ['oh-hai-bridge(1)', 'oh-hai-send(1)', 'oh-hai-messages(1)', 'oh-hai-fleet(1)', 'oh-hai-doctor(1)', 'oh-hai(1)'],
};

export const PAGES: readonly PageSpec[] = [oh_hai, bridge, session, inbox, doctor, send, messages, fleet, hub, config, mcp];
