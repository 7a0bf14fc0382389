import { readdirSync } from 'node:fs';
import path from 'node:path';
import { countListing } from './io-counts.js';
import { STATE_FILES } from './records.js';

/**
 * The spool's files (docs/spool.md). The records a connection appends go to `bridge.ndjson`,
 * the current segment; once it holds enough, it is sealed by a rename to
 * `bridge.<first seq, 12 digits>.ndjson` and a new `bridge.ndjson` begins. A sealed segment is
 * never written again, and only the consumer removes one, oldest first, once every record in
 * it is printed, acknowledged at the Hub and past `retain_printed`. A spool of 0.11 and before
 * is one `bridge.ndjson` from seq 1: it is the current segment of this layout as it stands.
 */

const SEALED = /^bridge\.(\d{12,})\.ndjson$/;

/** The sealed segment whose first record has `first`; 12 digits, so names sort as their seqs do. */
export const sealedSegmentName = (first: number): string => `bridge.${String(first).padStart(12, '0')}.ndjson`;

export interface SealedSegment {
  file: string;
  /** The seq of its first record, from its name. */
  first: number;
}

/** The sealed segments in `dir`, oldest first; none when the directory does not exist. */
export function sealedSegments(dir: string): SealedSegment[] {
  let names: string[];
  countListing();
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const found: SealedSegment[] = [];
  for (const name of names) {
    const m = SEALED.exec(name);
    if (m) found.push({ file: path.join(dir, name), first: Number(m[1]) });
  }
  return found.sort((a, b) => a.first - b.first);
}

/** Is `name` one of the spool's files (the current segment or a sealed one)? For watchers and the entry walk. */
export const isSpoolFile = (name: string): boolean => name === STATE_FILES.spool || SEALED.test(name);
