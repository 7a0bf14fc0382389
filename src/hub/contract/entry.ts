import { fail, ok, type Result } from '../../core/index.js';
import { isShortAddress, isShortEntryId, isShortSender, parseAddress, validateId, validateSender } from './ids.js';
import { bad, describe, guard, isIsoInstant, isObj, must, str, utf8Bytes, type Obj } from '../../util/shape.js';
import type { Entry, EntryKind, MessageIntent, PriorState, ReceiptStatus } from './types.js';

/** MA2H §7: `text` is at most 65,536 bytes of UTF-8. */
export const MAX_TEXT_BYTES = 65_536;

export const ENTRY_KINDS: readonly EntryKind[] = ['directive', 'message', 'response', 'receipt'];
export const MESSAGE_INTENTS: readonly MessageIntent[] = ['notify', 'ask', 'task'];
export const RECEIPT_STATUSES: readonly ReceiptStatus[] = ['acknowledged', 'bounced', 'expired'];
export const PRIOR_STATES: readonly PriorState[] = ['queued', 'delivered'];

const COMMON_FIELDS = ['id', 'kind', 'from', 'to', 'created_at', 'thread_id'] as const;

/** Each kind's own fields (beyond the common ones), required and optional. */
const KIND_FIELDS: Record<EntryKind, { required: readonly string[]; optional: readonly string[] }> = {
  directive: { required: ['text'], optional: [] },
  message: { required: ['message_id', 'intent', 'text'], optional: ['in_reply_to'] },
  response: { required: ['message_id', 'in_reply_to', 'text'], optional: [] },
  receipt: { required: ['message_id', 'status'], optional: ['prior', 'reason'] },
};

/** Each kind's every field, common ones included. */
const fieldsOf = (k: EntryKind): ReadonlySet<string> => new Set([...COMMON_FIELDS, ...KIND_FIELDS[k].required, ...KIND_FIELDS[k].optional]);
const FIELDS_OF: Record<EntryKind, ReadonlySet<string>> = {
  directive: fieldsOf('directive'),
  message: fieldsOf('message'),
  response: fieldsOf('response'),
  receipt: fieldsOf('receipt'),
};

const kindsOwning = (field: string): EntryKind[] =>
  ENTRY_KINDS.filter((k) => KIND_FIELDS[k].required.includes(field) || KIND_FIELDS[k].optional.includes(field));

const listKinds = (kinds: EntryKind[]): string =>
  kinds.length === 1 ? `kind ${kinds[0]}` : `kinds ${kinds.slice(0, -1).join(', ')} and ${kinds[kinds.length - 1]}`;

/** A receipt `reason` is a snake_case code; MA2H §12 names four, a newer Hub may add more. */
const REASON_CODE = /^[a-z][a-z0-9_]{0,63}$/;

/** `text` of an entry or a request: a string of at most MAX_TEXT_BYTES of UTF-8. */
export function checkText(v: unknown, where: string): Result<string> {
  if (typeof v !== 'string') return fail(`${where} must be a string, got ${describe(v)}`);
  const bytes = utf8Bytes(v);
  if (bytes > MAX_TEXT_BYTES) return fail(`${where} is ${bytes} bytes of UTF-8; the limit is ${MAX_TEXT_BYTES}`);
  return ok(v);
}

function entryLabel(x: Obj): string {
  const id = x.id;
  if (typeof id !== 'string' || id.length === 0) return 'entry (without an id)';
  return `entry ${id.length > 64 ? `${id.slice(0, 64)}…` : id}`;
}

/**
 * MA2H §7: exactly the common fields plus the kind's own — a field of another kind
 * (an unsigned cross-type field) or an unknown field makes the entry invalid.
 */
export function validateEntry(x: unknown): Result<Entry> {
  if (!isObj(x)) return fail(`entry must be a JSON object, got ${describe(x)}`);
  const lean = leanEntry(x);
  if (lean !== null) return ok(lean);
  // Every printed entry passes here: its label is built only for a message.
  const kind = x.kind;
  if (typeof kind !== 'string' || !(ENTRY_KINDS as readonly string[]).includes(kind)) {
    const label = entryLabel(x);
    return fail(kind === undefined ? `${label} has no 'kind'` : `${label} has kind ${describe(kind)}; expected one of ${ENTRY_KINDS.join(', ')}`);
  }
  const k = kind as EntryKind;
  const fields = FIELDS_OF[k];
  for (const field of Object.keys(x)) {
    if (fields.has(field)) continue;
    const owners = kindsOwning(field);
    return fail(
      owners.length > 0
        ? `${entryLabel(x)} of kind ${k} carries field '${field}', which belongs to ${listKinds(owners)}`
        : `${entryLabel(x)} of kind ${k} carries unknown field '${field}'`,
    );
  }
  return guard(
    () => `${entryLabel(x)} of kind ${k}`,
    () => readEntry(x, k),
  );
}

/** Days 01–28 of any month, a time of day, UTC: an instant isIsoInstant accepts, in one test. */
const PLAIN_INSTANT = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?Z$/;

/** A text this short is under MAX_TEXT_BYTES whatever its characters (a UTF-16 unit is at most 3 bytes of UTF-8). */
const PLAIN_TEXT_LENGTH = Math.floor(MAX_TEXT_BYTES / 3);

/**
 * The entry as readEntry would return it, when it is a directive, message or response in the
 * usual shape (short plain ids, a UTC instant on a day every month has, a text that needs no
 * byte count): one test a field and no closures. Every printed entry is validated
 * again by the reader, ~40 K instructions each on the full path in V8's interpreter
 * (docs/performance.md "Warm bridge (session 11)"). null is no verdict: the full path
 * decides, and gives the reason when there is one.
 */
function leanEntry(x: Obj): Entry | null {
  const { id, from, to, created_at, thread_id, kind, text } = x;
  if (kind !== 'directive' && kind !== 'message' && kind !== 'response') return null;
  if (!isShortEntryId(id) || typeof from !== 'string' || !isShortSender(from) || typeof to !== 'string' || !isShortAddress(to)) return null;
  if (typeof created_at !== 'string' || !PLAIN_INSTANT.test(created_at)) return null;
  if (typeof text !== 'string' || text.length > PLAIN_TEXT_LENGTH) return null;
  if (thread_id !== undefined && !isShortEntryId(thread_id)) return null;
  const fields = FIELDS_OF[kind];
  for (const field of Object.keys(x)) if (!fields.has(field)) return null;
  const common = thread_id === undefined ? { id, from, to, created_at } : { id, from, to, created_at, thread_id };
  if (kind === 'directive') return { ...common, kind, text };
  const { message_id, in_reply_to } = x;
  if (!isShortEntryId(message_id)) return null;
  if (kind === 'response') return isShortEntryId(in_reply_to) ? { ...common, kind, message_id, in_reply_to, text } : null;
  const intent = x.intent;
  if (intent !== 'notify' && intent !== 'ask' && intent !== 'task') return null;
  if (in_reply_to === undefined) return { ...common, kind, message_id, intent, text };
  return isShortEntryId(in_reply_to) ? { ...common, kind, message_id, intent, text, in_reply_to } : null;
}

function readEntry(x: Obj, kind: EntryKind): Entry {
  const where = 'entry';
  const id = must(validateId(str(x, 'id', where), "field 'id'"));
  const from = must(validateSender(str(x, 'from', where), "field 'from'"));
  const to = str(x, 'to', where);
  must(parseAddress(to, "field 'to'"));
  const created_at = str(x, 'created_at', where);
  if (!isIsoInstant(created_at)) bad(`field 'created_at' must be an ISO-8601 instant, got ${describe(created_at)}`);
  const common = { id, from, to, created_at, ...optionalId(x, 'thread_id') };
  for (const field of KIND_FIELDS[kind].required) {
    if (x[field] === undefined) bad(`missing required field '${field}'`);
  }
  const text = (): string => must(checkText(x.text, "field 'text'"));
  const messageId = (): string => must(validateId(x.message_id, "field 'message_id'"));
  switch (kind) {
    case 'directive':
      return { ...common, kind, text: text() };
    case 'message':
      return {
        ...common,
        kind,
        message_id: messageId(),
        intent: enumField(x, 'intent', MESSAGE_INTENTS),
        text: text(),
        ...optionalId(x, 'in_reply_to'),
      };
    case 'response':
      return {
        ...common,
        kind,
        message_id: messageId(),
        in_reply_to: must(validateId(x.in_reply_to, "field 'in_reply_to'")),
        text: text(),
      };
    case 'receipt': {
      const status = enumField(x, 'status', RECEIPT_STATUSES);
      const prior = x.prior === undefined ? undefined : enumField(x, 'prior', PRIOR_STATES);
      if (status === 'bounced' && prior === undefined) bad("a bounced receipt must carry 'prior' (queued or delivered)");
      let reason: string | undefined;
      if (x.reason !== undefined) {
        if (typeof x.reason !== 'string' || !REASON_CODE.test(x.reason)) {
          bad(`field 'reason' must be a snake_case code such as session_lapsed, got ${describe(x.reason)}`);
        }
        reason = x.reason;
      }
      return {
        ...common,
        kind,
        message_id: messageId(),
        status,
        ...(prior === undefined ? {} : { prior }),
        ...(reason === undefined ? {} : { reason }),
      };
    }
  }
}

function optionalId<K extends string>(x: Obj, key: K): { [P in K]?: string } {
  if (x[key] === undefined) return {};
  return { [key]: must(validateId(x[key], `field '${key}'`)) } as { [P in K]?: string };
}

function enumField<T extends string>(x: Obj, key: string, allowed: readonly T[]): T {
  const v = x[key];
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    bad(`field '${key}' is ${describe(v)}; expected one of ${allowed.join(', ')}`);
  }
  return v as T;
}

/** The shape of a Delivery (entry + signature string) without checking either's content. */
export function splitDelivery(x: unknown): Result<{ entry: unknown; signature: string }> {
  if (!isObj(x)) return fail(`delivery must be a JSON object, got ${describe(x)}`);
  if (typeof x.signature !== 'string') return fail(`delivery is missing its 'signature' string, got ${describe(x.signature)}`);
  if (x.entry === undefined) return fail("delivery is missing its 'entry'");
  return ok({ entry: x.entry, signature: x.signature });
}
