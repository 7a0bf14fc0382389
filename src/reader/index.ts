// The reader as a library: the reading loop of a state dir (claim reader.json, ensure one
// connection, print after the cursor and advance it, wait, stop with the documented outcome and
// the epilogue) for `oh-hai bridge` (the session leg), `oh-hai inbox watch` (the principal leg)
// and anything else that reads what the connection spooled. Imports nothing of src/cli.
export { Reader, readReaderKnobs, type LegRun, type ReaderIO, type ReaderKnobs, type ReaderLeg } from './reader.js';
export { watchPrincipal, type WatchRun } from './principal.js';
export { NAME as WATCH_NAME } from './principal-words.js';
export { processSignals, StopRequest, type HandledSignal, type SignalSource } from './signals.js';
export { leaseEpilogue, warningWindowMs, type ConsumerView } from './epilogue.js';
export { readerRefusal, decideHolder, type HolderFacts } from './holder.js';
export { displacedBy } from './attendance.js';
export { Collected, type TakenRecord } from './printer.js';
export { type NamedFlags, relayedStop } from './connection.js';
export { plain, quoteText, UNTRUSTED, entrySummary, transitionSummary, withLabel, NO_LABELS, type Labels } from './summary.js';
