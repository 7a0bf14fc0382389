/** Every error code MA2H names (§0, §3, §8, §12), with the status the Hub answers it with. */
export const HUB_ERROR_STATUS = {
  invalid_request: 400,
  text_too_long: 400,
  token_in_url: 400,
  unauthorized: 401,
  forbidden: 403,
  messaging_disabled: 403,
  session_closed_by_operator: 403,
  not_found: 404,
  session_not_found: 404,
  message_not_found: 404,
  agent_not_found: 404,
  recipient_not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  session_held: 409,
  too_many_sessions: 409,
  idempotency_conflict: 409,
  not_respondable: 409,
  already_responded: 409,
  session_lapsed: 410,
  session_closed: 410,
  payload_too_large: 413,
  rate_limited: 429,
  unavailable: 503,
} as const;

export type HubErrorCode = keyof typeof HUB_ERROR_STATUS;

/**
 * A session presented after it ended: `410 session_<state>` (§12). closed_by_operator
 * is 403 on re-registration and on presenting it (§0), 410 when it is a send's target.
 */
export const sessionEndedCode = (state: 'lapsed' | 'closed' | 'closed_by_operator'): HubErrorCode => `session_${state}`;
