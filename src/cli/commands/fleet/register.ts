import type { Registration } from '../index.js';
import { addAgentFlags } from '../../messaging/flags.js';

const FLEET_HELP = `
Without --sessions: every agent of the account (the agent directory, MA2H §10) that is not
revoked, one row each: its label (what \`send --to <label>\` takes), its principal address
agent:<id>, the best reachability of its live sessions (or "no live session": mail to
agent:<id> waits for the next one), and its live sessions. On a terminal the columns are
aligned; in a pipe they are tab-separated.

With --sessions: every live session in the account, with its reachability as the Hub sees it:
  online    a consumer drained or connected within the presence window
  offline   nothing is draining it right now
  unknown   the Hub has no presence signal for it — not evidence that it is down
Lease instants are the Hub's, printed verbatim; nothing here is "time remaining".

Rows whose session has a state entry on this host (under the state root) are annotated
from local files, with no further Hub call:
  home found · consumer live / reader attending · N unread
      N unread = records spooled that no reader has printed yet (the lag)
  home found · consumer DEAD
      nothing on this host drains that session; \`oh-hai bridge\` with that agent session
      starts a connection
  home found · consumer UNKNOWN / reader unknown
      the record is there and could not be read (null, not false, under --json).
      DO NOT RELAUNCH ON THIS: it is not evidence that nothing is running, and a relaunch
      against a live connection changes the session's address — whoever writes to the old
      one loses track of it. Find out why the record is unreadable first.
  no local state here
      this host has no state for it. That is local state, not a Hub signal: it says
      nothing either way about a session on another machine.`;

export const register: Registration = (program, host) => {
  const fleet = program
    .command('fleet')
    .description('Every agent you can address (and, with --sessions, every live session), and what this host knows about each.');
  const ls = fleet
    .command('ls')
    .description('List every agent of the account with its reachability and live sessions; --sessions lists every live session, annotated with local state.')
    .option('--sessions', 'one row per live session (the session view), annotated with what this host knows')
    .option('--json', 'one JSON array (fields: JSON OUTPUT in the man page)')
    .option('--state-home <path>', 'the state root to read local state from (absolute path)')
    .addHelpText('after', FLEET_HELP);
  addAgentFlags(ls, { session: false }).action(async (opts: Record<string, string | boolean | undefined>) => {
    const { runFleet } = await import('./run.js');
    host.finish('oh-hai fleet ls', await runFleet(opts, host.io));
  });
};
