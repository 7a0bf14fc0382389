// The web inbox: the human's side of the reference Hub, served at `/` beside the API.
import type { Clock } from '../../../util/clock.js';
import { hubApiClient } from './port.js';
import { createWebInbox, type WebHandler } from './routes.js';

export { createWebInbox, type WebHandler, type WebInboxOptions } from './routes.js';
export { hubApiClient, type WebHub, type ApiAnswer, type ApiRefusal } from './port.js';

/**
 * The web inbox as `createHubServer`'s `extraRoutes`, calling the API of the server it is
 * mounted on. `baseUrl` is read per call, since the port is known only after listening.
 */
export function mountWebInbox(o: { clock: Clock; baseUrl: () => string; signInDelaySeconds?: number }): { routes: WebHandler; close(): Promise<void> } {
  const hub = hubApiClient(o.baseUrl);
  return {
    routes: createWebInbox({ hub, clock: o.clock, ...(o.signInDelaySeconds === undefined ? {} : { signInDelaySeconds: o.signInDelaySeconds }) }),
    close: () => hub.close(),
  };
}
