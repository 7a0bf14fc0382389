// The web inbox: the human's side of the reference Hub, served at `/` beside the API.
export { createWebInbox, type WebHandler, type WebInboxOptions } from './routes.js';
export { hubApiClient, type WebHub, type ApiAnswer, type ApiRefusal } from './port.js';
