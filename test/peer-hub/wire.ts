import type { Json } from './canonical.js';
import type { JsonStyle } from './knobs.js';

/** Keys in reverse insertion order at every depth: JSON key order carries no meaning. */
function reversed(v: Json): Json {
  if (Array.isArray(v)) return v.map(reversed);
  if (v !== null && typeof v === 'object') {
    const out: { [key: string]: Json } = {};
    for (const k of Object.keys(v).reverse()) out[k] = reversed(v[k] as Json);
    return out;
  }
  return v;
}

/** The response body text. `pretty` spreads it over lines (used for multi-line SSE data). */
export function emit(v: Json, style: JsonStyle, pretty = false): string {
  const shaped = style.reverseKeys ? reversed(v) : v;
  return pretty ? JSON.stringify(shaped, null, 1) : JSON.stringify(shaped);
}

/** Unknown fields a forward-compatible client must ignore (MA2H §0), added to response objects only. */
export function withExtras(obj: { [key: string]: Json }, style: JsonStyle, tag: string): { [key: string]: Json } {
  if (!style.extraFields) return obj;
  return { ...obj, [`x_peer_${tag}`]: { note: 'ignore me', n: 1.5, list: [null, true, 'é\u2028'] } };
}

/** The §0 error body, with detail fields beyond code and message. */
export function errorBody(code: string, message: string, details: { [key: string]: Json }, style: JsonStyle): { [key: string]: Json } {
  const error: { [key: string]: Json } = { code, message, ...details };
  if (style.extraFields) {
    error.request_id = `rq-${Math.random().toString(36).slice(2, 10)}`;
    error.docs = 'https://peer-hub.invalid/errors#' + code;
  }
  return withExtras({ error }, style, 'error');
}
