// The product's vocabulary, below everything else: the exit contract, coded errors, the one
// Result shape, where state and config live by default, and the knob registry. Imports
// nothing of the project (the layering check holds it to that).
export * from './exit.js';
export * from './result.js';
export * from './coded.js';
export * from './state-root.js';
export * from './knobs.js';
export * from './outcome.js';
