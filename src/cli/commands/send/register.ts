import type { Command } from 'commander';
import type { MessageIntent } from '../../../hub/contract/index.js';
import type { Registration } from '../index.js';
import { addAgentFlags } from '../../messaging/flags.js';

const SNAPSHOTS = `
A send is queued, never "delivered": the Hub accepted it, nothing more. The destination
snapshot it prints:
  online    a consumer drained or connected to that mailbox within the presence window
  offline   nothing is draining that mailbox right now; it is delivered when a consumer drains it
  unknown   the Hub has no presence signal for that address — not evidence that it is down
Follow the delivery track with \`oh-hai messages list\` (queued → delivered → acknowledged,
or bounced / expired). Acknowledged means a consumer read the bytes, never that the model
acted on them.

This agent session is attached automatically when it has one (the session \`oh-hai bridge\`
registered), so answers and receipts reach the run that is reading; otherwise they go to
the agent's principal mailbox. A transient failure is retried with the same idempotency key,
so a retry never queues a second copy.

The text is the last argument, or stdin when it is \`-\` or absent and stdin is a pipe.

Exit codes: 0 queued · 2 usage (bad address, no text) · 3 the credential is dead, or agent
messaging is switched off for the account · 4 no such recipient, or that session has ended ·
13 the Hub is unreachable (retries spent).`;

const ASK_WAIT = `
With --wait <seconds>, ask polls the message every 2 s and prints the response when it comes.
When the wait runs out it says so, with the message id to check later, and exits 0 — as with
the bridge, a wait that elapsed is not a failure. An ask that bounced or expired while waiting
is reported with its prior state and also exits 0: the send itself worked.`;

const INTENTS: { name: string; intent: MessageIntent; summary: string }[] = [
  { name: 'send', intent: 'notify', summary: 'Send a notify: information, no reply expected.' },
  { name: 'ask', intent: 'ask', summary: 'Send an ask: a question the recipient answers with `oh-hai reply`.' },
  { name: 'task', intent: 'task', summary: 'Send a task: one action, with what done looks like; the recipient answers with `oh-hai reply`.' },
];

function sendCommand(program: Command, spec: (typeof INTENTS)[number]): Command {
  const cmd = program
    .command(`${spec.name} [text]`)
    .description(spec.summary)
    .option(
      '--to <agent>',
      "an agent's label (looked up in the account's directory), agent:<id> (its principal mailbox) or agent:<id>#sess_… (one run; see `oh-hai fleet ls`)",
    )
    .option('--json', 'print the Message the Hub returned, as one JSON line');
  return addAgentFlags(cmd, { session: true });
}

export const register: Registration = (program, host) => {
  for (const spec of INTENTS) {
    const cmd = sendCommand(program, spec);
    if (spec.intent === 'ask') cmd.option('--wait <seconds>', 'wait this long for the response and print it');
    cmd.addHelpText('after', spec.intent === 'ask' ? SNAPSHOTS + '\n' + ASK_WAIT : SNAPSHOTS);
    cmd.action(async (text: string | undefined, opts: Record<string, string | boolean | undefined>) => {
      const { runSend } = await import('./run.js');
      host.finish(`oh-hai ${spec.name}`, await runSend(spec.intent, text, opts, host.io));
    });
  }

  const reply = program
    .command('reply <id> [text]')
    .description('Answer an ask or a task: <id> is the message id the bridge printed after `reply:` (an entry id works too).')
    .option('--json', 'print the response Message the Hub returned, as one JSON line')
    .addHelpText(
      'after',
      `
An entry id (ent_…) is looked up in this agent session's spool and mapped to its message.
The answer goes to the asker's session when it attached one. It is queued, not delivered.
The text is the last argument, or stdin when it is \`-\` or absent and stdin is a pipe.

Exit codes: 0 queued · 2 usage, or that message takes no (more) answers · 3 the credential is
dead, or agent messaging is switched off · 4 no such message · 13 the Hub is unreachable.`,
    );
  addAgentFlags(reply, { session: true }).action(async (id: string, text: string | undefined, opts: Record<string, string | boolean | undefined>) => {
    const { runReply } = await import('./run.js');
    host.finish('oh-hai reply', await runReply(id, text, opts, host.io));
  });
};
