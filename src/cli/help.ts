import type { Command } from 'commander';

/** A top-level command as the grouped help lists it: one terse line, and examples under its own --help. */
interface HelpEntry {
  name: string;
  summary: string;
  examples: readonly string[];
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
        examples: ['oh-hai bridge', 'oh-hai bridge --session reviewer --wait 60', 'oh-hai bridge --exit-codes'],
      },
      { name: 'inbox', summary: "Read the agent's principal mailbox (directives from a human)", examples: ['oh-hai inbox watch'] },
      {
        name: 'messages',
        summary: 'What you sent or received, and how far each message got',
        examples: ['oh-hai messages list', 'oh-hai messages show msg_…'],
      },
    ],
  ],
  [
    'Sending:',
    [
      {
        name: 'send',
        summary: 'Send a notify: information, no reply expected',
        examples: ['oh-hai send --to reviewer "build 42 is green"', 'echo "long text" | oh-hai send --to agent:agt_…'],
      },
      {
        name: 'ask',
        summary: 'Ask a question; the recipient answers with oh-hai reply',
        examples: ['oh-hai ask --to reviewer "is the diff ready?"', 'oh-hai ask --to reviewer --wait 120 "ship it?"'],
      },
      { name: 'task', summary: 'Hand over one action, with what done looks like', examples: ['oh-hai task --to builder "run the suite; done = all green"'] },
      { name: 'reply', summary: 'Answer an ask or a task', examples: ['oh-hai reply msg_… "yes, ship it"'] },
    ],
  ],
  [
    'Sessions:',
    [
      {
        name: 'session',
        summary: "Stand this agent session's Hub session down, or ask how it stands",
        examples: ['oh-hai session status', 'oh-hai session close'],
      },
      { name: 'fleet', summary: 'Every agent you can address, and what this host knows of each', examples: ['oh-hai fleet ls', 'oh-hai fleet ls --sessions'] },
    ],
  ],
  [
    'Setup:',
    [
      { name: 'setup', summary: 'First run: the Hub URL, a login and the sender policy', examples: ['oh-hai setup --hub https://hub.example.com'] },
      { name: 'login', summary: 'Verify a token with the Hub and store it (0600)', examples: ['oh-hai login --token-stdin < token-file'] },
      { name: 'logout', summary: 'Forget stored tokens for the Hub (local only)', examples: ['oh-hai logout --human'] },
      { name: 'upgrade', summary: 'Migrate this machine to the current release', examples: ['oh-hai upgrade'] },
      { name: 'teach', summary: "Print the snippet for an agent's instructions", examples: ['oh-hai teach >> AGENTS.md', 'oh-hai teach --mcp'] },
      { name: 'doctor', summary: "Check this machine's setup, one line per check", examples: ['oh-hai doctor', 'oh-hai doctor --self-test'] },
      { name: 'mcp', summary: "Serve this agent's mailbox as MCP tools over stdio", examples: ['oh-hai mcp'] },
    ],
  ],
  [
    'Operating a Hub:',
    [
      { name: 'hub', summary: 'Run the reference MA2H Hub and administer it', examples: ['oh-hai hub serve --data ./hub', 'oh-hai hub agent ls'] },
      { name: 'demo', summary: 'A whole round trip on an embedded Hub in a temp dir', examples: ['oh-hai demo'] },
    ],
  ],
];

/** Group, order, summarise and give examples to the top-level commands registered on `program`. */
export function arrangeHelp(program: Command): void {
  const entries = HELP_GROUPS.flatMap(([heading, list]) => list.map((e) => ({ ...e, heading })));
  const rank = (c: Command) => {
    const i = entries.findIndex((e) => e.name === c.name());
    return i === -1 ? entries.length : i;
  };
  for (const c of program.commands) {
    const e = entries.find((x) => x.name === c.name());
    if (e === undefined) continue;
    c.helpGroup(e.heading).summary(e.summary);
    c.addHelpText('after', `\nExamples:\n${e.examples.map((x) => `  $ ${x}`).join('\n')}\n`);
  }
  (program.commands as Command[]).sort((a, b) => rank(a) - rank(b));
  // `help` itself goes with the setup commands rather than under a heading of its own.
  program.commandsGroup('Setup:').helpCommand('help [command]', 'display help for command');
}
