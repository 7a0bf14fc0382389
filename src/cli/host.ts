import type { CliIO } from './io.js';
import type { Outcome } from './outcome.js';

/** What main.ts hands a command registration: the IO to use and where to put the outcome. */
export interface CommandHost {
  io: CliIO;
  /** The command's name for stop lines, e.g. `oh-hai bridge`. */
  finish(name: string, outcome: Outcome): void;
}
