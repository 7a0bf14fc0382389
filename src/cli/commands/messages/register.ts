import type { Registration } from '../index.js';
import { addAgentFlags } from '../../messaging/flags.js';

const TRACK_HELP = `
The delivery track of each message, with the Hub's instants verbatim (the Hub's clock):
  queued        the Hub accepted it; nobody has it yet
  delivered     a consumer holds it durably (spooled on the recipient's machine)
  acknowledged  a reader's cursor passed it: a consumer read the bytes — never proof that
                the model acted on it
  bounced       its session lapsed or closed first; the prior says how far it got:
                  prior: queued     never seen — nothing ever held it
                  prior: delivered  seen but never confirmed — a consumer held it, no reader
                                    acknowledged it
  expired       not acknowledged within the Hub's message TTL (with its prior, as above)
Each terminal state (acknowledged, bounced, expired) also sends you a receipt entry.`;

export const register: Registration = (program, host) => {
  const messages = program.command('messages').description('What you sent (or received) and how far each message got: the delivery track.');

  const list = messages
    .command('list')
    .description('One line per message, newest first: its state and delivery track.')
    .option('--json', 'one JSON array of Messages (fields: JSON OUTPUT in the man page)')
    .option('--limit <n>', 'at most this many messages')
    .option('--before <cursor>', 'older messages, from the cursor a previous page printed')
    .option('--received', 'what this agent received instead of what it sent')
    .option('--all', 'also the notifies `oh-hai doctor --self-test` sent itself (hidden by default; MA2H cannot delete them)')
    .addHelpText('after', TRACK_HELP);
  addAgentFlags(list, { session: false }).action(async (opts: Record<string, string | boolean | undefined>) => {
    const { runList } = await import('./run.js');
    host.finish('oh-hai messages list', await runList(opts, host.io));
  });

  const show = messages
    .command('show <id>')
    .description('One message in full: parties, track, destination snapshot, response.')
    .option('--json', 'the Message as one JSON document')
    .addHelpText('after', TRACK_HELP);
  addAgentFlags(show, { session: false }).action(async (id: string, opts: Record<string, string | boolean | undefined>) => {
    const { runShow } = await import('./run.js');
    host.finish('oh-hai messages show', await runShow(id, opts, host.io));
  });
};
