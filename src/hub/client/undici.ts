import { createRequire } from 'node:module';
import type { Agent as UndiciAgent, Client as UndiciClient } from 'undici';

/**
 * undici's index also loads fetch, WebSocket, EventSource, the cache and the mock layers:
 * ~8.5 MiB of resident memory in the background connection, which only ever calls
 * `dispatcher.request`. So load just the Agent and the request API, and attach the API to
 * the Dispatcher prototype exactly as undici's own index does.
 */
const require = createRequire(import.meta.url);
const api: object = require('undici/lib/api/index.js');
const dispatcher: { prototype: object } = require('undici/lib/dispatcher/dispatcher.js');
Object.assign(dispatcher.prototype, api);

export const Agent: typeof UndiciAgent = require('undici/lib/dispatcher/agent.js');
export type Agent = UndiciAgent;

/** One connection of its own (stream-connections.ts); the Agent's pools are made of these, so it loads no module more. */
export const Client: typeof UndiciClient = require('undici/lib/dispatcher/client.js');
export type Client = UndiciClient;
