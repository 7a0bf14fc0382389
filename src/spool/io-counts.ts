/**
 * What this process has done to its state files: opens by file name, directory listings and
 * version checks (an lstat). Plain counters, always on (an increment each), so a test can hold
 * a path to its budget without strace — a waiting reader's wake reads the spool it holds open
 * once, lists no directory and opens no record that did not change
 * (test/unit/reader/wake-io.test.ts).
 */
export interface IoCounts {
  /** Opens per file name (basename), through openStateFile. */
  opens: Record<string, number>;
  /** readdir of a state dir (the spool's segment listing). */
  listings: number;
  /** lstat of a memoised file, to see whether it changed (FileMemo). */
  versionChecks: number;
  /** Reads through the spool's held current segment (SpoolReader.hold), one per readFrom. */
  heldReads: number;
}

let counts: IoCounts = { opens: {}, listings: 0, versionChecks: 0, heldReads: 0 };

export const ioCounts = (): IoCounts => ({ ...counts, opens: { ...counts.opens } });

export function resetIoCounts(): void {
  counts = { opens: {}, listings: 0, versionChecks: 0, heldReads: 0 };
}

export function countOpen(name: string): void {
  counts.opens[name] = (counts.opens[name] ?? 0) + 1;
}

export function countListing(): void {
  counts.listings += 1;
}

export function countVersionCheck(): void {
  counts.versionChecks += 1;
}

export function countHeldRead(): void {
  counts.heldReads += 1;
}
