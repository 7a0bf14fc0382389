// The web inbox: the human's side of the reference Hub, served at `/` beside the API.
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../../../util/clock.js';
import type { Store } from '../sql.js';
import { hubApiClient } from './port.js';
import { createWebInbox, type WebHandler } from './routes.js';

export { createWebInbox, type WebHandler, type WebInboxOptions } from './routes.js';
export { hubApiClient, type WebHub, type ApiAnswer, type ApiRefusal } from './port.js';

/**
 * The web inbox as `createHubServer`'s `extraRoutes`, calling the API of the server it is
 * mounted on. `baseUrl` and `store` are read per call: the port and the store are known only
 * once the Hub has started.
 */
export function mountWebInbox(o: {
  clock: Clock;
  baseUrl: () => string;
  store: () => Store;
  signingKey: string;
  signInDelaySeconds?: number;
  /** Whose request it is (the sign-in throttle counts per client); default the socket's peer. */
  clientAddress?: (req: IncomingMessage) => string | null;
}): {
  routes: WebHandler;
  close(): Promise<void>;
} {
  const hub = hubApiClient(o.baseUrl);
  return {
    routes: createWebInbox({
      hub,
      store: o.store,
      signingKey: o.signingKey,
      clock: o.clock,
      ...(o.signInDelaySeconds === undefined ? {} : { signInDelaySeconds: o.signInDelaySeconds }),
      ...(o.clientAddress === undefined ? {} : { clientAddress: o.clientAddress }),
    }),
    close: () => hub.close(),
  };
}
