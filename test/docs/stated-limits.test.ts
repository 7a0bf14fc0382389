import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { unroff } from '../../src/cli/man/generate.js';
import { repoRoot } from '../helpers/cli.js';

/**
 * The product doc states some limits outright rather than glossing them ("stated rather
 * than glossed"); a user who reads only the man pages must meet them too.
 */
const page = (file: string): string => unroff(readFileSync(path.join(repoRoot, 'man', file), 'utf8')).replace(/\s+/g, ' ');

describe('limits the man pages state', () => {
  it.each([
    ['oh-hai-bridge.1', 'the signature cannot be checked: the sender is the Hub\u2019s assertion', 'your trust in a sender is your trust in the Hub'],
    [
      'oh-hai-bridge.1',
      'the verification order',
      "the MA2H-Signature is well-formed; its t is inside the Hub's advertised replay window (300 s when none is advertised); its jti has not been seen",
    ],
    [
      'oh-hai-bridge.1',
      'a pidfile is not a mutex',
      'a userspace pidfile is not a mutex (a recycled pid, or a crash between check and write, can still produce two claimants)',
    ],
    [
      'oh-hai-bridge.1',
      'two hosts cannot see each other',
      "two hosts cannot see each other's state \u2014 pids are host-local, so a record from another machine can only be aged out by its heartbeat, never signalled from here",
    ],
    ['oh-hai-bridge.1', 'acknowledged is not acted on', 'a consumer read the bytes, never that the model acted on them'],
    ['oh-hai-config.5', 'the policy is routing, not authentication', 'routing policy, not authentication'],
    [
      'oh-hai-config.5',
      'never widen it to make a command run',
      'If you do not know which policy the operator wants, ask them; never widen it to make a command run',
    ],
  ])('%s: %s', (file, _what, sentence) => {
    expect(page(file)).toContain(sentence);
  });
});
