import { arrayOf, bool, f, int, nullable, num, object, oneOf, record, str, type Shape } from './shape.js';

/**
 * What every `--json` prints (docs/json.md): ONE JSON document on stdout — an array for a
 * list, an object otherwise — compact, followed by one newline, and nothing else on stdout.
 * Progress and warnings stay on stderr. Fields are only ever added (a new optional field is
 * not a break); renaming, removing or retyping one is, and is noted in docs/json.md.
 * Streams are the exception and keep NDJSON: `bridge --raw/--json` and `inbox watch
 * --json` print one spool envelope per line as records arrive (docs/spool.md).
 *
 * The man pages render these fields (JSON OUTPUT) and test/integration/cli/json-shape.test.ts
 * runs every command here against a real Hub and checks what it printed against them.
 */

const REACH = oneOf('online', 'offline', 'unknown');
const MESSAGE_STATE = oneOf('queued', 'delivered', 'acknowledged', 'bounced', 'expired');
const SESSION_STATE = oneOf('active', 'lapsed', 'closed', 'closed_by_operator');

export const MESSAGE: Shape = object('Message', [
  f('id', str, 'the message id (msg_…): what `messages show` and `reply` take'),
  f('from', str, 'the sender: agent:<id>, agent:<id>#sess_…, or human:<account id> for a directive'),
  f('to', str, 'the address it was sent to'),
  f('intent', oneOf('notify', 'ask', 'task', 'directive', 'response'), 'what kind of message'),
  f('text', str, 'the text, verbatim'),
  f('created_at', str, "when the Hub accepted it (the Hub's clock, verbatim)"),
  f('state', MESSAGE_STATE, 'how far it got on the delivery track'),
  f('prior', nullable(oneOf('queued', 'delivered')), 'for bounced and expired: how far it had got before; else null'),
  f(
    'track',
    arrayOf(object('TrackStep', [f('state', MESSAGE_STATE, 'a state'), f('at', str, "when (the Hub's clock)")])),
    'every state with its instant, oldest first',
  ),
  f(
    'destination',
    nullable(object('Destination', [f('address', str, 'the address'), f('snapshot', REACH, 'reachability when it was sent')])),
    'the recipient snapshot at send time; null when the Hub sent none',
  ),
  f(
    'response',
    nullable(object('Response', [f('message_id', str, "the response's message id"), f('text', str, 'the answer'), f('at', str, "when (the Hub's clock)")])),
    'the answer to an ask or task; else null',
  ),
  f('in_reply_to', nullable(str), 'for a response: the ask it answers; else null'),
  f('idempotent_replay', bool, 'true when the Hub answered a retried send from its idempotency key'),
]);

const HOLDER = object('Holder', [
  f('home', str, 'the consumer home that holds it'),
  f('host', str, 'its host'),
  f('pid', int, 'its pid'),
  f('since', nullable(str), "since when (the Hub's clock)"),
  f('last_seen_at', nullable(str), "last seen (the Hub's clock)"),
]);

export const SESSION: Shape = object('Session', [
  f('id', str, 'the session id (sess_…)'),
  f('agent_id', str, 'its agent'),
  f('address', str, 'agent:<id>#sess_…'),
  f('name', nullable(str), 'the session name it registered with, if any'),
  f('state', SESSION_STATE, "the Hub's state"),
  f('lease_seconds', int, 'the lease length'),
  f('expires_at', str, "when the lease ends unless renewed (the Hub's clock)"),
  f('last_renewed_at', str, "the last renewal (the Hub's clock)"),
  f('created_at', str, "when it was registered (the Hub's clock)"),
  f('closed_at', nullable(str), "when it was closed, if it was (the Hub's clock)"),
  f('holder', nullable(HOLDER), 'the consumer holding it, if any'),
]);

const LOCAL_SESSION = object('LocalSessionAnnotation', [
  f('entry', str, "this host's state entry directory"),
  f('consumer_alive', nullable(bool), 'the background connection: true live, false dead, null unknown (unreadable record, or another host)'),
  f('consumer_pid', nullable(int), 'its pid, when recorded'),
  f('consumer_note', nullable(str), 'why dead or unknown, in words; null when live'),
  f('reader_attending', nullable(bool), 'a reader attends: true, false, or null unknown'),
  f('reader_note', nullable(str), 'why not, in words'),
  f('lag', nullable(int), 'records spooled that no reader has printed yet; null when unreadable'),
]);

const FLEET_SESSION = object('FleetSession', [
  f('address', str, 'the session address agent:<id>#sess_… — what `send --to` takes to reach this one run'),
  f('agent_id', str, 'its agent'),
  f('agent_label', nullable(str), "the agent's label"),
  f('session_id', str, 'the session id'),
  f('name', nullable(str), 'the session name, if any'),
  f('state', SESSION_STATE, 'always active (the fleet lists live sessions)'),
  f('reachability', REACH, 'online: a consumer connected or drained within the presence window'),
  f('expires_at', str, "lease end (the Hub's clock)"),
  f('last_renewed_at', nullable(str), "last renewal (the Hub's clock)"),
  f('holder', nullable(object('FleetHolder', [f('host', str, 'host'), f('pid', int, 'pid')])), 'the consumer holding it, if any'),
  f('local', nullable(LOCAL_SESSION), 'what this host knows of it; null: no local state here (says nothing about other machines)'),
]);

const FLEET_AGENT = object('FleetAgent', [
  f('id', str, 'the agent id'),
  f('label', nullable(str), 'its label: what `send --to <label>` takes'),
  f('address', str, 'agent:<id>, its principal mailbox'),
  f('source', oneOf('account', 'config'), 'account: minted in the account; config: a configured token identity'),
  f('reachability', oneOf('online', 'offline', 'unknown', 'no_session'), 'the best of its live sessions; no_session when it has none'),
  f('live_sessions', int, 'how many live sessions it has'),
  f('sessions', arrayOf(str), 'their session ids'),
]);

const AGENT_ROW = object('AgentRow', [
  f('id', str, 'the agent id'),
  f('label', nullable(str), 'its label'),
  f('revoked', bool, 'revoked agents take no mail and their tokens get 401'),
  f('source', oneOf('account', 'config'), 'minted in the account, or a configured token identity'),
]);

const SESSION_RECORD = object('SessionRecord', [
  f('id', str, 'the session id'),
  f('address', str, 'its address'),
  f('name', nullable(str), 'its name'),
  f('pinned', bool, 'pinned by a session id (--session sess_…)'),
  f('lease_seconds', int, 'lease length'),
  f('expires_at', str, "as last seen (the Hub's clock, verbatim)"),
  f('renewed_at', num, 'when this host last saw it renewed (our clock, ms since the epoch)'),
  f(
    'history',
    arrayOf(
      object('SessionHistory', [
        f('id', str, 'earlier session id'),
        f('address', str, 'its address'),
        f('replaced_at', num, 'our clock, ms'),
        f('reason', str, 'why it was replaced'),
      ]),
    ),
    'earlier sessions of this entry, oldest first',
  ),
]);

const LOCAL_ANNOTATION = object('LocalAnnotation', [
  f('entry', str, 'the state entry directory'),
  f('consumer', oneOf('live', 'dead', 'unknown'), 'the background connection'),
  f('consumer_note', nullable(str), 'why dead or unknown'),
  f('consumer_pid', nullable(int), 'its pid'),
  f('consumer_heartbeat_age_ms', nullable(num), 'age of its heartbeat (our clock)'),
  f('reader_attending', nullable(bool), 'a reader attends'),
  f('reader_note', nullable(str), 'why not'),
  f('lag', nullable(int), 'unread records'),
]);

const POLICY_WRITE = object('PolicyWrite', [
  f(
    'status',
    oneOf('exists', 'written', 'not-written'),
    'exists: a policy was there and was left untouched; written: allow_from was written now; not-written: the directory could not be read',
  ),
  f('path', str, 'the user config file'),
  f('allow_from', nullable(arrayOf(str)), 'the items written, or found (null when not written or not a list)'),
]);

const IDENTITY = object('Identity', [
  f('kind', oneOf('agent', 'human'), "an agent token, or the account's human token"),
  f('agent_id', nullable(str), 'the agent (agent tokens)'),
  f('agent_label', nullable(str), "the agent's label"),
  f('account_id', nullable(str), 'the account (human tokens; null for an agent token)'),
  f('credentials_file', str, 'where the token is stored (0600)'),
]);

const STOOD_DOWN = object('StoodDown', [
  f('id', str, 'the session id'),
  f('address', str, 'its address, which now takes no mail'),
  f('hub_state', oneOf('closed', 'closed_by_operator', 'lapsed', 'not_found'), 'what the Hub said when asked to close it'),
  f('closed_at', nullable(str), "the Hub's instant, when it closed it just now"),
]);

const CHECK = object('Check', [
  f('name', str, 'the check (docs/doctor.md)'),
  f('status', oneOf('pass', 'warn', 'fail', 'skip'), 'its verdict'),
  f('detail', str, 'for people; wording may change'),
  f('fix', str, 'what to do; present exactly when it warns or fails', true),
  f('measured', record, 'measured values, keys per check in docs/doctor.md', true),
]);

const DOCTOR = object('DoctorReport', [
  f('status', oneOf('pass', 'warn', 'fail'), 'the worst check'),
  f('checks', arrayOf(CHECK), 'every check, in order'),
  f(
    'self_test',
    object('SelfTest', [
      f('status', oneOf('pass', 'warn', 'fail'), 'worst of the steps and bridge checks'),
      f('client_key', str, 'the throwaway session key'),
      f('session', nullable(str), 'the throwaway session, once registered'),
      f(
        'steps',
        arrayOf(
          object('Step', [
            f('name', str, 'register|send|drain|verify|ack|reachability|close'),
            f('status', oneOf('pass', 'fail', 'skip'), 'verdict'),
            f('ms', nullable(num), 'duration, our clock'),
            f('detail', str, 'for people'),
            f('fix', str, 'on failure', true),
          ]),
        ),
        'the round trip, step by step',
      ),
      f('failed', arrayOf(str), 'the failing steps and bridge checks'),
    ]),
    'present only with --self-test',
    true,
  ),
]);

export interface JsonOutput {
  /** The invocation, without `oh-hai` and `--json` (extra flags included: `fleet ls --sessions`). */
  command: string;
  /** The man page that documents it. */
  page: string;
  shape: Shape;
  /** One sentence: what the document is. */
  doc: string;
}

export const JSON_OUTPUTS: readonly JsonOutput[] = [
  { command: 'send', page: 'oh-hai-send', shape: MESSAGE, doc: 'the Message the Hub returned (so for ask and task too)' },
  { command: 'ask', page: 'oh-hai-send', shape: MESSAGE, doc: 'the Message; with --wait, the Message as it stands when the wait ends (its response, if any)' },
  { command: 'task', page: 'oh-hai-send', shape: MESSAGE, doc: 'the Message the Hub returned' },
  { command: 'reply', page: 'oh-hai-send', shape: MESSAGE, doc: 'the response Message the Hub returned' },
  { command: 'messages list', page: 'oh-hai-messages', shape: arrayOf(MESSAGE), doc: 'an array of Messages, newest first (before 0.13: one Message per line)' },
  { command: 'messages show', page: 'oh-hai-messages', shape: MESSAGE, doc: 'the Message' },
  { command: 'fleet ls', page: 'oh-hai-fleet', shape: arrayOf(FLEET_AGENT), doc: 'an array: every agent of the account that is not revoked' },
  {
    command: 'fleet ls --sessions',
    page: 'oh-hai-fleet',
    shape: arrayOf(FLEET_SESSION),
    doc: 'an array: every live session, annotated with local state (before 0.13, fleet ls --json printed {"sessions", "unmatched_local_entries"}; unreadable local entries are now warnings on stderr)',
  },
  {
    command: 'session status',
    page: 'oh-hai-session',
    shape: object('SessionStatus', [
      f('session_id', nullable(str), "this agent session's session id; null when it holds none (then hub_error says why)"),
      f('hub', nullable(SESSION), "the Hub's record (the authority); null when the Hub does not know it"),
      f('hub_error', nullable(str), 'why hub is null'),
      f(
        'local',
        nullable(
          object('LocalStatus', [f('record', nullable(SESSION_RECORD), "this host's session.json"), f('annotation', LOCAL_ANNOTATION, "this host's view")]),
        ),
        "this host's state; null when it has no state entry",
      ),
    ]),
    doc: "the Hub's view and this host's",
  },
  {
    command: 'session close',
    page: 'oh-hai-session',
    shape: object('SessionClose', [
      f('stood_down', nullable(STOOD_DOWN), 'the session closed and forgotten; null with --keep-connection, or when none was recorded'),
      f(
        'connection',
        nullable(object('StoppedConnection', [f('pid', int, 'its pid'), f('host', str, 'its host')])),
        'the background connection stopped; null when none ran',
      ),
      f('kept_open', bool, 'true with --keep-connection: the session stays open for the next bridge'),
      f('unread', int, 'mail of the closed session no reader printed, receipts not counted (0 = nothing a sender waits on was left unread)'),
      f('purged', nullable(str), 'the state entry cleared by --purge, else null'),
    ]),
    doc: 'what was stopped, closed and forgotten',
  },
  {
    command: 'login',
    page: 'oh-hai',
    shape: object('Login', [
      f('hub', str, 'the Hub URL'),
      f('identity', IDENTITY, 'whose token was stored'),
      f('policy', nullable(POLICY_WRITE), 'with --human: the sender policy; else null'),
    ]),
    doc: 'the identity stored (the lines for people stay on stderr)',
  },
  {
    command: 'setup',
    page: 'oh-hai',
    shape: object('Setup', [
      f('hub', str, 'the Hub URL'),
      f('identity', nullable(IDENTITY), 'the token stored now; null when already logged in'),
      f('hub_url_written', bool, 'true when [hub] url was written to the user config now'),
      f('policy', POLICY_WRITE, 'the sender policy'),
      f('agent_credential', bool, 'whether an agent credential resolves for this Hub (the bridge needs one)'),
    ]),
    doc: 'what setup did (the lines for people stay on stderr)',
  },
  {
    command: 'hub agent add',
    page: 'oh-hai-hub',
    shape: object('MintedAgent', [
      f('agent', object('MintedAgentRow', [f('id', str, 'the new agent id'), f('label', nullable(str), 'its label')]), 'the agent'),
      f('token', str, 'its token, shown once'),
    ]),
    doc: 'the agent minted and its token',
  },
  { command: 'hub agent ls', page: 'oh-hai-hub', shape: arrayOf(AGENT_ROW), doc: 'an array: the agent directory (MA2H §10), configured identities included' },
  {
    command: 'hub agent revoke',
    page: 'oh-hai-hub',
    shape: object('Revoked', [f('agent_id', str, 'the agent revoked'), f('revoked', bool, 'always true')]),
    doc: 'the agent revoked',
  },
  { command: 'hub directive', page: 'oh-hai-hub', shape: MESSAGE, doc: 'the directive as a Message' },
  { command: 'hub session close', page: 'oh-hai-hub', shape: SESSION, doc: 'the Session after the operator close' },
  {
    command: 'hub lift',
    page: 'oh-hai-hub',
    shape: object('Lifted', [f('lifted', nullable(int), 'how many stops were lifted (null when the Hub does not say)')]),
    doc: 'the stops lifted',
  },
  {
    command: 'hub messaging',
    page: 'oh-hai-hub',
    shape: object('AccountState', [f('agent_messaging', nullable(bool), 'whether agents may message')]),
    doc: 'the account setting',
  },
  { command: 'doctor', page: 'oh-hai-doctor', shape: DOCTOR, doc: 'the doctor envelope (docs/doctor.md)' },
  { command: 'bridge status', page: 'oh-hai-bridge', shape: DOCTOR, doc: "doctor's envelope with the four bridge checks (retired; carried over)" },
];

/** Commands whose `--json` is a stream of NDJSON lines, not one document (the exception, by design). */
export const JSON_STREAMS: readonly { command: string; page: string; doc: string }[] = [
  { command: 'bridge', page: 'oh-hai-bridge', doc: 'the same as --raw: one spool envelope per line (docs/spool.md)' },
  { command: 'inbox watch', page: 'oh-hai-inbox', doc: 'the same as --raw: one spool envelope per line, as directives arrive' },
];
