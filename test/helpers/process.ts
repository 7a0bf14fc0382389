import { readFileSync } from 'node:fs';
import { waitFor } from './wait.js';

/** The process no longer runs (gone, or a zombie awaiting its parent). */
export function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? false;
  } catch {
    return true;
  }
}

/** Send `signal` and wait until the process is gone; one that is already gone is left be. */
export async function killAndWait(pid: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  await waitFor(() => gone(pid), { what: `pid ${pid} to exit` });
}
