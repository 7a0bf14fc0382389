import { HubClient, type HubClientOptions } from '../hub/client/index.js';

/**
 * What the consumer asks of a Hub: the HubClient methods it calls, and nothing else. The
 * Consumer gets its port from a factory (ConsumerOptions.hub) once it knows the Hub's URL
 * and its credential, so a unit test drives the whole stop machine and drive loop against a
 * fake Hub in-process, on a fake clock (test/unit/consumer/consumer.test.ts).
 */
export type HubPort = Pick<HubClient, 'close' | 'capability' | 'whoami' | 'createSession' | 'getSession' | 'closeSession' | 'drain' | 'ack' | 'openStream'>;

export type HubPortFactory = (opts: HubClientOptions) => HubPort;

/** The real one: HTTP to the Hub. */
export const hubClientPort: HubPortFactory = (opts) => new HubClient(opts);
