import type {
  AccountState,
  AgentRow,
  FleetRow,
  LiftRequest,
  LiftResult,
  Message,
  MessageList,
  MintedAgent,
  OperatorStop,
  Whoami,
} from '../../contract/index.js';
import type { HubFailure, HubResult } from '../../client/index.js';
import { HubClient } from '../../client/index.js';

/** A refusal from the Hub's API, kept as the API's own code so the page shows what a client would see. */
export interface ApiRefusal {
  status: number;
  code: string;
  message: string;
}

export type ApiAnswer<T> = { ok: true; value: T } | ({ ok: false } & ApiRefusal);

/**
 * Everything the web pages ask of the Hub. Each call is one request to the Hub's own JSON
 * API made with the signed-in human's token, so a page behaves exactly as the API does
 * (messaging_disabled, operator stops, bounces) and there is no second copy of Hub logic.
 */
export interface WebHub {
  whoami(token: string): Promise<ApiAnswer<Whoami>>;
  fleet(token: string): Promise<ApiAnswer<FleetRow[]>>;
  operatorStops(token: string): Promise<ApiAnswer<OperatorStop[]>>;
  operatorClose(token: string, sessionId: string): Promise<ApiAnswer<unknown>>;
  liftStop(token: string, req: LiftRequest): Promise<ApiAnswer<LiftResult>>;
  /** Directives this human sent, newest first. */
  sentDirectives(token: string, limit: number): Promise<ApiAnswer<MessageList>>;
  directive(token: string, to: string, text: string): Promise<ApiAnswer<Message>>;
  agents(token: string): Promise<ApiAnswer<AgentRow[]>>;
  mintAgent(token: string, label: string): Promise<ApiAnswer<MintedAgent>>;
  revokeAgent(token: string, agentId: string): Promise<ApiAnswer<unknown>>;
  account(token: string): Promise<ApiAnswer<AccountState>>;
  setMessaging(token: string, on: boolean): Promise<ApiAnswer<AccountState>>;
}

function refusal(f: HubFailure): ApiRefusal {
  switch (f.kind) {
    case 'http':
      return { status: f.status, code: f.code, message: f.message };
    case 'network':
      return { status: 502, code: 'hub_unreachable', message: `the web inbox could not reach the Hub's API: ${f.message}` };
    case 'protocol':
      return { status: 502, code: 'hub_protocol', message: `the Hub's API answered outside the contract: ${f.message}` };
  }
}

const flat = async <T>(p: Promise<HubResult<T>>): Promise<ApiAnswer<T>> => {
  const r = await p;
  return r.ok ? { ok: true, value: r.value } : { ok: false, ...refusal(r.failure) };
};

/**
 * The WebHub over HTTP to the Hub's own API on this same server, through the project's
 * HubClient. `baseUrl` is read per call: the server knows its port only after it listens.
 * One client per verified token (the account has one human token), so connections are reused.
 */
export function hubApiClient(baseUrl: () => string): WebHub & { close(): Promise<void> } {
  const clients = new Map<string, HubClient>();
  const client = (token: string): HubClient => {
    let c = clients.get(token);
    if (!c) {
      c = new HubClient({ baseUrl: baseUrl(), token, userAgent: 'oh-hai web inbox' });
      clients.set(token, c);
    }
    return c;
  };
  return {
    // A token not yet verified gets a client of its own that is not kept.
    whoami: async (token) => {
      const c = new HubClient({ baseUrl: baseUrl(), token, userAgent: 'oh-hai web inbox' });
      try {
        return await flat(c.whoami());
      } finally {
        await c.close();
      }
    },
    fleet: (t) => flat(client(t).fleet()),
    operatorStops: (t) => flat(client(t).operatorStops()),
    operatorClose: (t, id) => flat(client(t).operatorClose(id)),
    liftStop: (t, req) => flat(client(t).liftStop(req)),
    sentDirectives: (t, limit) => flat(client(t).listMessages({ direction: 'sent', limit })),
    directive: (t, to, text) => flat(client(t).directive({ to, text })),
    agents: (t) => flat(client(t).listAgents({ includeConfig: true })),
    mintAgent: (t, label) => flat(client(t).mintAgent({ label })),
    revokeAgent: (t, id) => flat(client(t).revokeAgent(id)),
    account: (t) => flat(client(t).account()),
    setMessaging: (t, on) => flat(client(t).patchAccount({ agent_messaging: on })),
    close: async () => {
      const all = [...clients.values()];
      clients.clear();
      await Promise.all(all.map((c) => c.close()));
    },
  };
}
