/**
 * What a stream of this process is connected to, decided once at start (docs/terminal.md):
 * a terminal gets the live status line, aligned tables, wrapping and (unless the user said
 * otherwise) colour; a pipe or a file gets the plain bytes a script parses.
 */
export interface TerminalFacts {
  /** The stream is a terminal (isatty). */
  tty: boolean;
  /** Paint FATAL / ⚠️ / pass / warn / fail. */
  color: boolean;
  /** The terminal's width, when it is a terminal that reports one. */
  columns: number | null;
}

/** Neither a terminal nor coloured: what a pipe, a file and an in-process test see. */
export const PLAIN: TerminalFacts = { tty: false, color: false, columns: null };

/**
 * Colour, as Node and most tools decide it: FORCE_COLOR forces it (FORCE_COLOR=0 or =false
 * forbids it), then NO_COLOR (any non-empty value, no-color.org) and TERM=dumb turn it off,
 * and otherwise a terminal gets colour and anything else does not.
 */
export function colorWanted(tty: boolean, env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return tty;
}

/** The facts of a stream from whether it is a terminal and the width it reports. */
export function terminalFacts(tty: boolean, columns: number | undefined, env: NodeJS.ProcessEnv): TerminalFacts {
  return { tty, color: colorWanted(tty, env), columns: tty && columns !== undefined && columns > 0 ? columns : null };
}
