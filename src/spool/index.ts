export * from './paths.js';
export * from './records.js';
export * from './spool.js';
export * from './cursor.js';
export * from './entry.js';
export * from './log.js';
export { watchFiles, type WatchOptions } from './watch.js';
export * from './process.js';
