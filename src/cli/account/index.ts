export * from './common.js';
export { whoami } from './hub-access.js';
export { canPrompt, promptLine, readToken } from './token-input.js';
