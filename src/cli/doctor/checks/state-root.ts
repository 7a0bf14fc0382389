import { lstatSync, mkdtempSync, readdirSync, rmdirSync, type Stats } from 'node:fs';
import path from 'node:path';
import { check, type Check } from '../report.js';

/**
 * The state root: can the bridge write there, and is what it holds private. Mail lives in
 * these files, so other-user bits are a fail and group bits a warn (a shared group may be
 * deliberate, but it still lets others read this agent's mail). The bridge tightens the
 * entries it opens; doctor only reports — it never changes a mode.
 */

export interface ModeProblem {
  path: string;
  /** Octal, e.g. '0644'. */
  mode: string;
  kind: 'other' | 'group' | 'owner';
}

const octal = (m: number): string => '0' + (m & 0o777).toString(8).padStart(3, '0');

function statOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** Every directory and file under `top` whose mode lets others in, or that another user owns. proper-lockfile's `*.lock` dirs hold nothing and are skipped. */
export function modeProblems(top: string, uid: number | null): { problems: ModeProblem[]; dirs: number; files: number } {
  const problems: ModeProblem[] = [];
  let dirs = 0;
  let files = 0;
  const visit = (p: string): void => {
    const st = statOrNull(p);
    if (!st || st.isSymbolicLink() || !(st.isDirectory() || st.isFile())) return;
    if (st.isDirectory()) dirs += 1;
    else files += 1;
    if (uid !== null && st.uid !== uid) problems.push({ path: p, mode: octal(st.mode), kind: 'owner' });
    else if ((st.mode & 0o007) !== 0) problems.push({ path: p, mode: octal(st.mode), kind: 'other' });
    else if ((st.mode & 0o070) !== 0) problems.push({ path: p, mode: octal(st.mode), kind: 'group' });
    if (!st.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(p);
    } catch {
      return;
    }
    for (const n of names.sort()) if (!n.endsWith('.lock')) visit(path.join(p, n));
  };
  visit(top);
  return { problems, dirs, files };
}

/** The nearest directory that exists, from `p` upwards. */
function nearestExisting(p: string): string {
  let dir = p;
  while (statOrNull(dir) === null && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/** Try to create (and remove) a directory where the bridge would write: the only honest writability test, since access(2) lies to root. */
function probeWritable(dir: string): string | null {
  try {
    rmdirSync(mkdtempSync(path.join(dir, '.oh-hai-doctor-')));
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
}

const listed = (ps: ModeProblem[]): string => {
  const shown = ps.slice(0, 4).map((p) => `${p.path} ${p.mode}`);
  return shown.join(', ') + (ps.length > shown.length ? ` and ${ps.length - shown.length} more` : '');
};

export function stateRootCheck(root: string, uid: number | null): Check {
  const tree = path.join(root, 'oh-hai');
  const probeAt = nearestExisting(tree);
  const unwritable = probeWritable(probeAt);
  if (unwritable !== null) {
    return check('state root', 'fail', `cannot create files under ${probeAt} (${unwritable}); the bridge keeps its state entries in ${tree}`, {
      fix: `make ${probeAt} writable by this user, or pass --state-home <absolute path> (and use the same one for oh-hai bridge)`,
      measured: { root, writable: false },
    });
  }
  if (statOrNull(tree) === null) {
    return check('state root', 'pass', `${root} is writable; ${tree} does not exist yet (the bridge creates it 0700 on its first run)`, {
      measured: { root, writable: true, problems: 0 },
    });
  }
  const { problems, dirs, files } = modeProblems(tree, uid);
  const measured = { root, writable: true, directories: dirs, files, problems: problems.length };
  const owner = problems.filter((p) => p.kind === 'owner');
  const other = problems.filter((p) => p.kind === 'other');
  const group = problems.filter((p) => p.kind === 'group');
  if (owner.length > 0) {
    return check('state root', 'fail', `owned by another user: ${listed(owner)}; the bridge refuses an entry it does not own`, {
      fix: `give it back (chown -R ${uid ?? '<you>'} ${tree}) or remove it, or pass --state-home <absolute path> to use a root of your own`,
      measured,
    });
  }
  if (other.length > 0) {
    return check('state root', 'fail', `other users can reach this agent's mail: ${listed(other)} (want directories 0700, files 0600)`, {
      fix: `chmod -R go-rwx ${tree}`,
      measured,
    });
  }
  if (group.length > 0) {
    return check('state root', 'warn', `group members can reach this agent's mail: ${listed(group)} (want directories 0700, files 0600)`, {
      fix: `chmod -R go-rwx ${tree} (the next oh-hai bridge also tightens the entry it opens)`,
      measured,
    });
  }
  return check('state root', 'pass', `${root} is writable; ${dirs} directories and ${files} files under ${tree}, none open to group or others`, { measured });
}
