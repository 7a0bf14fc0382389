import { existsSync } from 'node:fs';
import path from 'node:path';
import { type Coded } from '../../core/index.js';
import { STATE_FILES, type StateDir } from '../../spool/index.js';
import type { CliIO } from '../io.js';

/**
 * The once-only check for a 0.9 per-directory home (docs/legacy-0.9.md). It costs one stat
 * on every run whose entry already has a session or a connection, and a stat per directory
 * walking up on an entry's first run; the adoption itself is loaded only when a home is there.
 */

/** A 0.9 home is `<dir>/.oh-hai/bridge` holding a session.json (src/spool/legacy.ts has the rest of the layout). */
const LEGACY_SESSION = path.join('.oh-hai', 'bridge', 'session.json');

export interface LegacyHookRequest {
  stateDir: StateDir;
  io: Pick<CliIO, 'env' | 'cwd' | 'clock' | 'pid'>;
  hubUrl: string;
  token: string;
  agentId: string;
  /** `sess_…` when the agent-session key pins one. */
  pinned: string | null;
}

/** The nearest 0.9 home at or above `start`, or null. */
export function findLegacyHome(start: string): string | null {
  for (let dir = path.resolve(start); ;) {
    if (existsSync(path.join(dir, LEGACY_SESSION))) return path.dirname(path.join(dir, LEGACY_SESSION));
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/**
 * Adopt a live 0.9 home into a state dir that has never had a session or a connection
 * (a new entry, or one whose adoption a crash interrupted). Lines for stderr, or the error
 * that ends the run (the Hub could not say whether the home is live).
 */
export async function adoptLegacyHomeOnce(req: LegacyHookRequest): Promise<Coded<string[]>> {
  const { stateDir } = req;
  if (existsSync(stateDir.path(STATE_FILES.session)) || existsSync(stateDir.path(STATE_FILES.consumer))) return { ok: true, value: [] };
  const legacyDir = findLegacyHome(req.io.cwd);
  if (legacyDir === null) return { ok: true, value: [] };
  const { adoptLegacyHome } = await import('./adopt-legacy.js');
  return adoptLegacyHome({ ...req, legacyDir });
}
