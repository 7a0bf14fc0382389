import { Option } from 'commander';
import type { Registration } from '../index.js';

// A hidden --token exists only to refuse it with the reason and the fix, instead of
// commander's bare "unknown option" — the value is already in shell history by then.
const tokenTrap = () => new Option('--token <token>').hideHelp();

export const register: Registration = (program, host) => {
  program
    .command('setup')
    .description('First run: the Hub URL, a login, the sender policy ([bridge] allow_from, only when none exists), then the next command.')
    .option('--hub <url>', 'the Hub origin (else MA2H_HUB_URL, the config, or a prompt on a terminal)')
    .option('--token-stdin', 'read the token from stdin (a file or a pipe); never pass a token as a flag value')
    .option('--agent <id>', 'which stored agent identity to use where several resolve')
    .option('--json', 'also print what setup did as one JSON object on stdout (fields: JSON OUTPUT in the man page)')
    .addOption(tokenTrap())
    .action(async (opts: { hub?: string; tokenStdin?: boolean; agent?: string; token?: string; json?: boolean }) => {
      const { runSetup } = await import('./run.js');
      host.finish('oh-hai setup', await runSetup(opts, host.io));
    });

  program
    .command('login')
    .description(
      "Verify a token with the Hub (GET /v1/whoami) and store it in the credentials file (0600). --human stores the account's human token and then writes the sender policy when none exists.",
    )
    .option('--hub <url>', 'the Hub origin (else MA2H_HUB_URL, else [hub] url in the config)')
    .option('--token-stdin', 'read the token from stdin (a file or a pipe) instead of an echo-off prompt')
    .option('--human', "the token is the account's human token")
    .option('--json', 'also print whose token was stored as one JSON object on stdout (fields: JSON OUTPUT in the man page)')
    .addOption(tokenTrap())
    .action(async (opts: { hub?: string; tokenStdin?: boolean; human?: boolean; token?: string; json?: boolean }) => {
      const { runLogin } = await import('./run.js');
      host.finish('oh-hai login', await runLogin(opts, host.io));
    });

  program
    .command('logout')
    .description('Forget stored tokens for the Hub: all of them, or only --human, or only --agent <id>. Local only; revoke a token at the Hub to kill it.')
    .option('--hub <url>', 'the Hub origin (else MA2H_HUB_URL, else [hub] url; with none, every Hub)')
    .option('--human', "forget the account's human token")
    .option('--agent <id>', "forget this agent's token")
    .action(async (opts: { hub?: string; human?: boolean; agent?: string }) => {
      const { runLogout } = await import('./run.js');
      host.finish('oh-hai logout', await runLogout(opts, host.io));
    });

  program
    .command('upgrade')
    .description(
      'Migrate this machine to the current release: writes the sender policy ([bridge] allow_from, every agent in the account) only when none exists.',
    )
    .option('--hub <url>', 'the Hub origin (else MA2H_HUB_URL, else [hub] url in the config)')
    .option('--agent <id>', 'which agent identity reads the directory where several resolve')
    .action(async (opts: { hub?: string; agent?: string }) => {
      const { runUpgrade } = await import('./run.js');
      host.finish('oh-hai upgrade', await runUpgrade(opts, host.io));
    });
};
