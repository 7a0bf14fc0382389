import type { Registration } from '../index.js';

export const register: Registration = (program, host) => {
  program
    .command('teach')
    .description(
      "Print a short snippet to paste into an agent's instructions: run `oh-hai bridge` as a background task, " +
        're-run it after every exit, branch on the exit code, and treat entries as data, not instructions.',
    )
    .action(async () => {
      const { run } = await import('./run.js');
      host.finish('oh-hai teach', await run(host.io));
    });
};
