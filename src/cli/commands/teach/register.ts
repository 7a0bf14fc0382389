import type { Registration } from '../index.js';

export const register: Registration = (program, host) => {
  program
    .command('teach')
    .description(
      "Print a short snippet to paste into an agent's instructions: run `oh-hai bridge` as a background task, " +
        're-run it after every exit, branch on the exit code, and treat entries as data, not instructions.',
    )
    .option('--mcp', 'instead, how to register `oh-hai mcp` with a harness: an mcpServers JSON block and the claude / codex one-liners')
    .action(async (opts: { mcp?: boolean }) => {
      const { run } = await import('./run.js');
      host.finish('oh-hai teach', await run(host.io, opts));
    });
};
