import type { Command } from 'commander';

/** A top-level command as the grouped help lists it: one terse line. */
interface HelpEntry {
  name: string;
  summary: string;
}

/**
 * The top-level help, grouped by what a user comes to do and in that order, with the bridge
 * first: it is the command an agent runs all day (docs/terminal.md). The listing shows each
 * command's one-line summary; its own --help keeps the full description and ends with
 * examples (as gh does). A command missing here is listed last, under commander's heading.
 */
const HELP_GROUPS: readonly (readonly [string, readonly HelpEntry[]])[] = [
  [
    'Reading mail:',
    [
      {
        name: 'bridge',
        summary: 'Print the mail waiting for this agent session, or wait for the next; re-run after every exit',
      },
      { name: 'inbox', summary: "Read the agent's principal mailbox (directives from a human)" },
      {
        name: 'messages',
        summary: 'What you sent or received, and how far each message got',
      },
    ],
  ],
  [
    'Sending:',
    [
      {
        name: 'send',
        summary: 'Send a notify: information, no reply expected',
      },
      {
        name: 'ask',
        summary: 'Ask a question; the recipient answers with oh-hai reply',
      },
      { name: 'task', summary: 'Hand over one action, with what done looks like' },
      { name: 'reply', summary: 'Answer an ask or a task' },
    ],
  ],
  [
    'Sessions:',
    [
      {
        name: 'session',
        summary: "Stand this agent session's Hub session down, or ask how it stands",
      },
      { name: 'fleet', summary: 'Every agent you can address, and what this host knows of each' },
    ],
  ],
  [
    'Setup:',
    [
      { name: 'setup', summary: 'First run: the Hub URL, a login and the sender policy' },
      { name: 'login', summary: 'Verify a token with the Hub and store it (0600)' },
      { name: 'logout', summary: 'Forget stored tokens for the Hub (local only)' },
      { name: 'upgrade', summary: 'Migrate this machine to the current release' },
      { name: 'teach', summary: "Print the snippet for an agent's instructions" },
      { name: 'doctor', summary: "Check this machine's setup, one line per check" },
      { name: 'mcp', summary: "Serve this agent's mailbox as MCP tools over stdio" },
    ],
  ],
  [
    'Operating a Hub:',
    [
      { name: 'hub', summary: 'Run the reference MA2H Hub and administer it' },
      { name: 'demo', summary: 'A whole round trip on an embedded Hub in a temp dir' },
    ],
  ],
];

/** Ids as the Hub mints them, so each example can be pasted as it is once the id is yours. */
const MSG = 'msg_0d29358616f4e5d01e0c3490';
const AGT = 'agt_003d9d46cfe67a774dbb50f4';
const SESS = 'sess_a36818341bbdf24cfbda2f21';

/**
 * Examples for every visible command, by command path, as gh gives them: terse, each a real
 * invocation (test/integration/cli/help.test.ts parses every one against the command tree
 * and fails on a visible command with none). Shown at the end of the command's --help and in
 * its man page's EXAMPLES.
 */
const EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  bridge: ['oh-hai bridge', 'oh-hai bridge --session reviewer --wait 60', 'oh-hai bridge --raw', 'oh-hai bridge --exit-codes'],
  inbox: ['oh-hai inbox watch'],
  'inbox watch': ['oh-hai inbox watch', 'oh-hai inbox watch --wait 60', 'oh-hai inbox watch --raw'],
  messages: ['oh-hai messages list', `oh-hai messages show ${MSG}`],
  'messages list': ['oh-hai messages list', 'oh-hai messages list --received --limit 20', 'oh-hai messages list --json'],
  'messages show': [`oh-hai messages show ${MSG}`, `oh-hai messages show ${MSG} --json`],
  send: ['oh-hai send --to reviewer "build 42 is green"', `echo "long text" | oh-hai send --to agent:${AGT}`],
  ask: ['oh-hai ask --to reviewer "is the diff ready?"', 'oh-hai ask --to reviewer --wait 120 "ship it?"'],
  task: ['oh-hai task --to builder "run the suite; done = all green"'],
  reply: [`oh-hai reply ${MSG} "yes, ship it"`],
  session: ['oh-hai session status', 'oh-hai session close'],
  'session status': ['oh-hai session status', 'oh-hai session status --session reviewer --json'],
  'session close': ['oh-hai session close', 'oh-hai session close --session reviewer --purge'],
  fleet: ['oh-hai fleet ls', 'oh-hai fleet ls --sessions'],
  'fleet ls': ['oh-hai fleet ls', 'oh-hai fleet ls --sessions', 'oh-hai fleet ls --json'],
  setup: ['oh-hai setup --hub https://hub.example.com'],
  login: ['oh-hai login --token-stdin < token-file', 'oh-hai login --human --token-stdin < human-token'],
  logout: ['oh-hai logout --human'],
  upgrade: ['oh-hai upgrade'],
  teach: ['oh-hai teach >> AGENTS.md', 'oh-hai teach --mcp'],
  doctor: ['oh-hai doctor', 'oh-hai doctor --self-test'],
  mcp: ['oh-hai mcp', 'oh-hai mcp --session reviewer'],
  hub: ['oh-hai hub serve --data ./hub', 'oh-hai hub agent ls'],
  'hub serve': ['oh-hai hub serve --data ./hub', 'oh-hai hub serve --data ./hub --host 0.0.0.0 --port 8080'],
  'hub agent': ['oh-hai hub agent add reviewer', 'oh-hai hub agent ls'],
  'hub agent add': ['oh-hai hub agent add reviewer', 'oh-hai hub agent add builder --data ./hub --json'],
  'hub agent ls': ['oh-hai hub agent ls', 'oh-hai hub agent ls --json'],
  'hub agent revoke': [`oh-hai hub agent revoke ${AGT}`],
  'hub directive': ['oh-hai hub directive --to reviewer "rotate the keys; done = the old ones refused"'],
  'hub session': [`oh-hai hub session close ${SESS}`],
  'hub session close': [`oh-hai hub session close ${SESS}`],
  'hub lift': [`oh-hai hub lift --agent ${AGT} --name reviewer`],
  'hub messaging': ['oh-hai hub messaging off', 'oh-hai hub messaging on'],
  demo: ['oh-hai demo'],
};

/** The examples of a command path ('hub agent add'); empty when it has none. */
export const commandExamples = (path: string): readonly string[] => EXAMPLES[path] ?? [];

/** Commander marks hidden commands with a private flag; help, man pages and the examples all skip them. */
export function isHiddenCommand(cmd: Command): boolean {
  return (cmd as unknown as { _hidden?: boolean })._hidden === true;
}

/** Every visible command below `cmd` with its path ('hub agent add'), parents before children. */
export function visibleCommands(cmd: Command, prefix = ''): { path: string; cmd: Command }[] {
  return cmd.commands
    .filter((c) => !isHiddenCommand(c))
    .flatMap((c) => {
      const path = prefix === '' ? c.name() : `${prefix} ${c.name()}`;
      return [{ path, cmd: c }, ...visibleCommands(c, path)];
    });
}

/** Group, order and summarise the top-level commands registered on `program`; give every visible command its examples. */
export function arrangeHelp(program: Command): void {
  const entries = HELP_GROUPS.flatMap(([heading, list]) => list.map((e) => ({ ...e, heading })));
  const rank = (c: Command) => {
    const i = entries.findIndex((e) => e.name === c.name());
    return i === -1 ? entries.length : i;
  };
  for (const c of program.commands) {
    const e = entries.find((x) => x.name === c.name());
    if (e !== undefined) c.helpGroup(e.heading).summary(e.summary);
  }
  for (const { path, cmd } of visibleCommands(program)) {
    const examples = commandExamples(path);
    if (examples.length > 0) cmd.addHelpText('after', `\nExamples:\n${examples.map((x) => `  $ ${x}`).join('\n')}\n`);
  }
  (program.commands as Command[]).sort((a, b) => rank(a) - rank(b));
  // `help` itself goes with the setup commands rather than under a heading of its own.
  program.commandsGroup('Setup:').helpCommand('help [command]', 'display help for command');
}
