import { JSON_OUTPUTS, JSON_STREAMS } from '../json/outputs.js';
import { fieldRows, SHARED_NAMES, shapeName, type Shape } from '../json/shape.js';
import { bold, roffParagraphs, roffTagged, roffText } from './roff.js';

const CONVENTION =
  'Every --json prints ONE JSON document on stdout \u2014 an array for a list, an object otherwise \u2014 on one line, followed by a newline, and nothing else on stdout; progress and warnings stay on stderr. Fields are only ever added; a field renamed, removed or retyped is a breaking change, noted in the release notes (docs/json.md). Below, every field of each document: its path, its type (T|null may be null; optional fields may be absent), and what it means.';

/** The named object shapes (Message, Session) a page's documents hold, each documented once on the page. */
function sharedShapes(shapes: readonly Shape[]): Map<string, Shape> {
  const found = new Map<string, Shape>();
  const visit = (s: Shape): void => {
    if (s.t === 'nullable' || s.t === 'array') return visit(s.of);
    if (s.t !== 'object') return;
    if (s.name !== undefined && SHARED_NAMES.has(s.name)) {
      if (found.has(s.name)) return;
      found.set(s.name, s);
    }
    for (const x of s.fields) visit(x.shape);
  };
  shapes.forEach(visit);
  return found;
}

/** The shared shape's name when a document is one (or an array of one), else null. */
function isShared(s: Shape): string | null {
  const inner = s.t === 'array' || s.t === 'nullable' ? s.of : s;
  return inner.t === 'object' && inner.name !== undefined && SHARED_NAMES.has(inner.name) ? inner.name : null;
}

/** The JSON OUTPUT section of a man page, from the registry the JSON-shape test checks real output against; [] when the page has none. */
export function jsonSection(page: string): string[] {
  const docs = JSON_OUTPUTS.filter((o) => o.page === page);
  const streams = JSON_STREAMS.filter((s) => s.page === page);
  if (docs.length === 0 && streams.length === 0) return [];
  const out = ['.SH "JSON OUTPUT"', roffParagraphs(CONVENTION)];
  for (const d of docs) {
    const shared = isShared(d.shape);
    out.push(`.SS "${roffText(`oh-hai ${d.command} --json`)}"`, roffParagraphs(`${shapeName(d.shape)}: ${d.doc}.${shared ? ` Its fields: ${shared} below.` : ''}`));
    if (!shared) for (const [k, v] of fieldRows(d.shape)) out.push(roffTagged(bold(k), roffText(v)));
  }
  for (const [name, shape] of sharedShapes(docs.map((d) => d.shape))) {
    out.push(`.SS "${roffText(name)}"`);
    for (const [k, v] of fieldRows(shape)) out.push(roffTagged(bold(k), roffText(v)));
  }
  for (const s of streams) out.push(`.SS "${roffText(`oh-hai ${s.command} --json`)}"`, roffParagraphs(`A stream, not one document: ${s.doc}.`));
  return out;
}
