import { z } from 'zod';
import { MAX_TEXT_BYTES } from '../../hub/contract/index.js';

/**
 * Strict input schemas: an argument the tool does not take, a wrong type or an empty text is
 * refused by the SDK before the tool runs, with a message naming the argument and the fix.
 */

/** An object of exactly these arguments; anything else is refused naming what the tool takes. */
export function strictArgs<S extends z.ZodRawShape>(tool: string, shape: S) {
  const takes = Object.keys(shape);
  const allowed = takes.length > 0 ? `${tool} takes only ${takes.join(', ')}` : `${tool} takes no arguments`;
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown argument(s) ${iss.keys.map((k) => JSON.stringify(k)).join(', ')}: ${allowed}` : undefined),
  });
}

export const toArg = z
  .string({ error: 'to must be a string: agent:<id> (the principal mailbox) or agent:<id>#sess_… (one run; see oh_hai_fleet)' })
  .min(1, 'to is empty: give agent:<id> or agent:<id>#sess_… (see oh_hai_fleet)')
  .describe(
    "an agent's label (looked up in the account's agent directory), agent:<id> (the principal mailbox: whichever live session claims it first) or agent:<id>#sess_… (one run; see oh_hai_fleet)",
  );

export const textArg = z
  .string({ error: 'text must be a string: what you want to say' })
  .min(1, 'text is empty: say what you want')
  .describe(`the message, at most ${MAX_TEXT_BYTES} bytes of UTF-8`);

/** Seconds to wait, as a number in [min, max]; the refusal names the range. */
export const seconds = (what: string, min: number, max: number) =>
  z
    .number({ error: `wait_seconds must be a number of seconds from ${min} to ${max}` })
    .min(min, `wait_seconds is below ${min}: give ${min} to ${max} seconds`)
    .max(max, `wait_seconds is above ${max}: give at most ${max} seconds (${what})`);

export const idArg = z
  .string({ error: 'id must be a string: the reply_id oh_hai_read returned (a message id), or an entry id' })
  .min(1, 'id is empty: give the reply_id oh_hai_read returned')
  .describe('the message id to answer (reply_id from oh_hai_read), or the entry id');

export const limitArg = z
  .number({ error: 'limit must be a whole number from 1 to 100' })
  .int('limit must be a whole number from 1 to 100')
  .min(1, 'limit must be at least 1')
  .max(100, 'limit must be at most 100')
  .describe("at most this many messages (1–100; default: the Hub's page size)");
