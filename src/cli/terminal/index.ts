export { colorWanted, PLAIN, terminalFacts, type TerminalFacts } from './detect.js';
export { highlightLine } from './highlight.js';
export { TerminalOutput } from './output.js';
export { paint, type Style } from './paint.js';
export { intervalTicker, StatusLine, type RawWriter, type Ticker } from './status-line.js';
export { alignRows, formatTable } from './table.js';
export { wrapLine, wrapText } from './wrap.js';
