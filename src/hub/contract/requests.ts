import type { Result } from '../../core/index.js';
import { MAX_TEXT_BYTES, MESSAGE_INTENTS } from './entry.js';
import { parseAddress, validateAgentId, validateId, validateSessionName } from './ids.js';
import { bad, describe, isObj, must, ShapeError, utf8Bytes, type Obj } from '../../util/shape.js';
import type {
  AccountPatch,
  AckRequest,
  CreateSessionRequest,
  DirectiveRequest,
  LiftRequest,
  MessageIntent,
  MintAgentRequest,
  RespondRequest,
  SendRequest,
} from './types.js';

/**
 * Request-body validators for the Hub. A failure carries the MA2H error code the Hub
 * answers with (`400 invalid_request`, or `400 text_too_long`). Request bodies are
 * strict: an unknown field is refused by name, so a client's typo is caught rather than
 * silently ignored.
 */
export type RequestCheck<T> = Result<T, { reason: string; code: 'invalid_request' | 'text_too_long' }>;

/** At most this many ids in one ack list. */
export const MAX_ACK_IDS = 1000;
export const MAX_LABEL_BYTES = 128;

const HEADER_VALUE = /^[A-Za-z0-9._:-]{1,128}$/;

class TextTooLong extends ShapeError {}

function check<T>(what: string, body: unknown, allowed: readonly string[], read: (b: Obj) => T): RequestCheck<T> {
  try {
    if (!isObj(body)) bad(`the body must be a JSON object, got ${describe(body)}`);
    for (const key of Object.keys(body)) {
      if (!allowed.includes(key)) bad(`unknown field '${key}'; allowed fields are ${allowed.join(', ')}`);
    }
    return { ok: true, value: read(body) };
  } catch (e) {
    if (!(e instanceof ShapeError)) throw e;
    return { ok: false, reason: `${what}: ${e.message}`, code: e instanceof TextTooLong ? 'text_too_long' : 'invalid_request' };
  }
}

const present = (b: Obj, key: string): boolean => b[key] !== undefined && b[key] !== null;

function text(b: Obj): string {
  const v = b.text;
  if (v === undefined) bad("missing required field 'text'");
  if (typeof v !== 'string') bad(`field 'text' must be a string, got ${describe(v)}`);
  if (v.trim().length === 0) bad("field 'text' is empty");
  const bytes = utf8Bytes(v);
  if (bytes > MAX_TEXT_BYTES) throw new TextTooLong(`field 'text' is ${bytes} bytes of UTF-8; the limit is ${MAX_TEXT_BYTES}`);
  return v;
}

function address(b: Obj, key: string): string {
  if (b[key] === undefined) bad(`missing required field '${key}'`);
  must(parseAddress(b[key], `field '${key}'`));
  return b[key] as string;
}

function requiredId(b: Obj, key: string): string {
  if (b[key] === undefined) bad(`missing required field '${key}'`);
  return must(validateId(b[key], `field '${key}'`));
}

function optionalId(b: Obj, key: string): { [k: string]: string } {
  return present(b, key) ? { [key]: must(validateId(b[key], `field '${key}'`)) } : {};
}

function optionalName(b: Obj): { name?: string } {
  return present(b, 'name') ? { name: must(validateSessionName(b.name, "field 'name'")) } : {};
}

function idList(b: Obj, key: string): string[] | undefined {
  if (!present(b, key)) return undefined;
  const v = b[key];
  if (!Array.isArray(v)) bad(`field '${key}' must be an array of entry ids, got ${describe(v)}`);
  if (v.length > MAX_ACK_IDS) bad(`field '${key}' lists ${v.length} ids; at most ${MAX_ACK_IDS} per request`);
  return v.map((item, i) => must(validateId(item, `${key}[${i}]`)));
}

export const validateCreateSession = (body: unknown): RequestCheck<CreateSessionRequest> =>
  check('create session', body, ['client_key', 'name', 'lease_seconds', 'home', 'host', 'pid'], (b) => {
    const out: CreateSessionRequest = { client_key: requiredId(b, 'client_key'), ...optionalName(b) };
    if (present(b, 'lease_seconds')) {
      const v = b.lease_seconds;
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) bad(`field 'lease_seconds' must be a positive number, got ${describe(v)}`);
      out.lease_seconds = v;
    }
    for (const key of ['home', 'host'] as const) {
      if (!present(b, key)) continue;
      const v = b[key];
      if (typeof v !== 'string' || !HEADER_VALUE.test(v)) bad(`field '${key}' must be 1–128 characters of A-Z a-z 0-9 . _ : -`);
      out[key] = v;
    }
    if (present(b, 'pid')) {
      const v = b.pid;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) bad(`field 'pid' must be a positive integer, got ${describe(v)}`);
      out.pid = v;
    }
    return out;
  });

export const validateSend = (body: unknown): RequestCheck<SendRequest> =>
  check('send', body, ['to', 'intent', 'text', 'session', 'in_reply_to', 'idempotency_key'], (b) => {
    const intent = b.intent;
    if (typeof intent !== 'string' || !(MESSAGE_INTENTS as readonly string[]).includes(intent)) {
      bad(intent === undefined ? "missing required field 'intent'" : `field 'intent' is ${describe(intent)}; expected one of ${MESSAGE_INTENTS.join(', ')}`);
    }
    return {
      to: address(b, 'to'),
      intent: intent as MessageIntent,
      text: text(b),
      ...optionalId(b, 'session'),
      ...optionalId(b, 'in_reply_to'),
      ...optionalId(b, 'idempotency_key'),
    };
  });

export const validateRespond = (body: unknown): RequestCheck<RespondRequest> =>
  check('respond', body, ['text', 'session'], (b) => ({ text: text(b), ...optionalId(b, 'session') }));

export const validateAck = (body: unknown): RequestCheck<AckRequest> =>
  check('ack', body, ['session', 'delivered', 'acknowledged'], (b) => {
    const out: AckRequest = { ...optionalId(b, 'session') };
    const delivered = idList(b, 'delivered');
    const acknowledged = idList(b, 'acknowledged');
    if (delivered) out.delivered = delivered;
    if (acknowledged) out.acknowledged = acknowledged;
    return out;
  });

export const validateDirective = (body: unknown): RequestCheck<DirectiveRequest> =>
  check('directive', body, ['to', 'text'], (b) => ({ to: address(b, 'to'), text: text(b) }));

export const validateLift = (body: unknown): RequestCheck<LiftRequest> =>
  check('lift operator stop', body, ['agent_id', 'client_key', 'name'], (b) => {
    if (b.agent_id === undefined) bad("missing required field 'agent_id'");
    return { agent_id: must(validateAgentId(b.agent_id, "field 'agent_id'")), ...optionalId(b, 'client_key'), ...optionalName(b) };
  });

export const validateAccountPatch = (body: unknown): RequestCheck<AccountPatch> =>
  check('account settings', body, ['agent_messaging'], (b) => {
    if (typeof b.agent_messaging !== 'boolean') {
      bad(
        b.agent_messaging === undefined
          ? "missing required field 'agent_messaging'"
          : `field 'agent_messaging' must be true or false, got ${describe(b.agent_messaging)}`,
      );
    }
    return { agent_messaging: b.agent_messaging };
  });

export const validateMintAgent = (body: unknown): RequestCheck<MintAgentRequest> =>
  check('mint agent', body, ['label'], (b) => {
    const v = b.label;
    if (v === undefined) bad("missing required field 'label'");
    if (typeof v !== 'string' || v.trim().length === 0) bad(`field 'label' must be a non-empty string, got ${describe(v)}`);
    if (utf8Bytes(v) > MAX_LABEL_BYTES) bad(`field 'label' is over ${MAX_LABEL_BYTES} bytes`);
    if (/\p{Cc}/u.test(v)) bad("field 'label' contains a control character");
    return { label: v };
  });
