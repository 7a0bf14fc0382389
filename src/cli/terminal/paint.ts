/** The few styles the CLI uses: red for what failed, yellow for what warns, green for what passed. */
export type Style = 'red' | 'yellow' | 'green' | 'dim' | 'bold';

const SGR: Record<Style, [number, number]> = {
  red: [31, 39],
  yellow: [33, 39],
  green: [32, 39],
  dim: [2, 22],
  bold: [1, 22],
};

/** `text` in `style` when colour is on; the text unchanged otherwise. */
export function paint(color: boolean, style: Style, text: string): string {
  if (!color || text === '') return text;
  const [on, off] = SGR[style];
  return `\x1b[${on}m${text}\x1b[${off}m`;
}
