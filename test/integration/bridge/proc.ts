import { readdirSync } from 'node:fs';
import { parentPid } from '../../../src/spool/index.js';

/** Every pid below `root` in the process tree (Linux /proc): what a harness's tree walk reaches. */
export function descendants(root: number): number[] {
  const all = readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
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
