import { closeSync, openSync } from 'node:fs';
import { isatty } from 'node:tty';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminal } from '../../../src/cli/io.js';
import { tempEnv, type TempEnv } from '../../helpers/env.js';

let t: TempEnv | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

describe('isTerminal answers as isatty(3) does', () => {
  it('for a file, /dev/null (a character device, not a terminal) and a descriptor that is not open', () => {
    t = tempEnv();
    const file = openSync(path.join(t.root, 'out.txt'), 'w', 0o600);
    const devNull = openSync('/dev/null', 'w');
    try {
      for (const fd of [file, devNull]) expect(isTerminal(fd)).toBe(isatty(fd));
      expect(isTerminal(file)).toBe(false);
      expect(isTerminal(devNull)).toBe(false);
    } finally {
      closeSync(file);
      closeSync(devNull);
    }
    expect(isTerminal(devNull)).toBe(false);
  });
});
