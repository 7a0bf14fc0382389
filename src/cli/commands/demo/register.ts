import type { Registration } from '../index.js';

export const register: Registration = (program, host) => {
  program
    .command('demo')
    .description('start an embedded Hub in a temp dir, mint two agents, send one a message and print it with a real oh-hai bridge; prints each step')
    .action(async () => {
      const { runDemo } = await import('./run.js');
      host.finish('oh-hai demo', await runDemo(host.io));
    });
};
