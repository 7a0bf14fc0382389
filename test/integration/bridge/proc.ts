import { readdirSync, readFileSync } from 'node:fs';
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

/** A process's run state and CPU ticks so far (Linux /proc), or null when it is gone. */
function cpuOf(pid: number): { state: string; ticks: number } | null {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { state: f[0]!, ticks: Number(f[11]) + Number(f[12]) };
  } catch {
    return null;
  }
}

/**
 * Resolves once `pid` is asleep with its CPU time unchanged over 10 ms (a reader idle in its
 * wait), or is gone; where there is no /proc, after 50 ms.
 */
export async function asleep(pid: number): Promise<void> {
  const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  if (cpuOf(process.pid) === null) return pause(50);
  let last = cpuOf(pid);
  for (;;) {
    await pause(10);
    const now = cpuOf(pid);
    if (now === null || (now.state === 'S' && last?.state === 'S' && now.ticks === last.ticks)) return;
    last = now;
  }
}
