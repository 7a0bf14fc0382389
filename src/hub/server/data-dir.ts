import { chmodSync, statSync } from 'node:fs';
import { ensureDir } from '../../util/fs-durable.js';

/**
 * Make the data dir private (0700), creating it if needed. A dir that already existed keeps its
 * mode under ensureDir, so one made 0755 by hand or by an older build is tightened here, as the
 * bridge repairs its state entry. Returns the mode it had when it was too open, else null.
 */
export function privateDataDir(dir: string): number | null {
  ensureDir(dir, 0o700);
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return null;
  chmodSync(dir, (mode & 0o700) | 0o700);
  return mode;
}
