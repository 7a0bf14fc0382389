import { compareVersions, parseVersion } from '../../../hub/contract/index.js';
import { check, type Check } from '../report.js';

/** package.json engines: undici 7 declares node ≥ 20.18.1. */
export const MIN_NODE = '20.18.1';

export function nodeCheck(version: string): Check {
  const have = parseVersion(version.replace(/^v/, ''));
  const need = parseVersion(MIN_NODE);
  if (!have.ok || !need.ok) {
    return check('node', 'warn', `cannot read the Node.js version "${version}"`, { fix: `run oh-hai on Node.js ${MIN_NODE} or later` });
  }
  const measured = { version: version.replace(/^v/, ''), minimum: MIN_NODE };
  if (compareVersions(have.value, need.value) < 0) {
    return check('node', 'fail', `Node.js ${measured.version} is older than ${MIN_NODE}, the oldest this oh-hai supports`, {
      fix: `install Node.js ${MIN_NODE} or later (20.x LTS from 20.18.1, or 22/24)`,
      measured,
    });
  }
  return check('node', 'pass', `Node.js ${measured.version} (needs ${MIN_NODE} or later)`, { measured });
}
