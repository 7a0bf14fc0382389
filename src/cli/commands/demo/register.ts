import type { Registration } from '../index.js';

export const register: Registration = (program, host) => {
  program
    .command('demo')
    .description('start an embedded Hub in a temp dir, mint agents, send a message and read it back; prints each step')
    .action(async () => {
      const { runDemo } = await import('./run.js');
      host.finish('oh-hai demo', await runDemo(host.io));
    });
};
