import type { AccountState, AgentRow, FleetRow, LiftRequest, Message, MintedAgent, Whoami } from '../../contract/index.js';

/** A refusal from the Hub's API, kept as the API's own code so the page shows what a client would see. */
export interface ApiRefusal {
  status: number;
  code: string;
  message: string;
}

export type ApiAnswer<T> = { ok: true; value: T } | ({ ok: false } & ApiRefusal);

/** One recorded operator stop, as `GET /v1/operator-stops` reports it. */
export interface OperatorStop {
  agent_id: string;
  agent_label: string | null;
  client_key: string | null;
  name: string | null;
  session_id: string | null;
  recorded_at: string;
}

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
  liftStop(token: string, req: LiftRequest): Promise<ApiAnswer<unknown>>;
  /** Directives this human sent, newest first. */
  sentDirectives(token: string, limit: number): Promise<ApiAnswer<{ messages: Message[]; next: string | null }>>;
  directive(token: string, to: string, text: string): Promise<ApiAnswer<Message>>;
  agents(token: string): Promise<ApiAnswer<AgentRow[]>>;
  mintAgent(token: string, label: string): Promise<ApiAnswer<MintedAgent>>;
  revokeAgent(token: string, agentId: string): Promise<ApiAnswer<unknown>>;
  account(token: string): Promise<ApiAnswer<AccountState>>;
  setMessaging(token: string, on: boolean): Promise<ApiAnswer<AccountState>>;
}
