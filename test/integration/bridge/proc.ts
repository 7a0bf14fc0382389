import { readFileSync, readdirSync } from 'node:fs';
import { parentPid } from '../../../src/spool/index.js';

/** Every pid below `root` in the process tree (Linux /proc): what a harness's tree walk reaches. */
export function descendants(root: number): number[] {
  const all = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
  const found: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const p = frontier.pop()!;
    for (const pid of all) {
      if (parentPid(pid) === p && !found.includes(pid)) {
        found.push(pid);
        frontier.push(pid);
      }
    }
  }
  return found;
}

/** The process no longer runs (gone, or a zombie awaiting its parent). */
export function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? false;
  } catch {
    return true;
  }
}
