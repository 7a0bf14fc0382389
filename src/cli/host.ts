import type { CliIO } from './io.js';
import type { Outcome } from '../core/index.js';

/** What program.ts hands a command registration: the IO to use and where to put the outcome. */
export interface CommandHost {
  io: CliIO;
  /** The command's name for stop lines, e.g. `oh-hai bridge`. */
  finish(name: string, outcome: Outcome): void;
  /** Run another command of this program in this process (a retired spelling forwarding); its exit code. */
  forward(argv: string[]): Promise<number>;
}
