// The web inbox: the human's side of the reference Hub, served at `/` beside the API.
export { createWebInbox, type WebHandler, type WebInboxOptions } from './routes.js';
export type { WebHub, ApiAnswer, ApiRefusal, OperatorStop } from './port.js';
