import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type * as Launch from '../../../src/cli/launch.cjs';
import { HOT_PATH_RAN as hotPathKey } from '../../../src/util/code-cache.js';

// The launcher is CommonJS (src/cli/launch.cts), which vitest does not transform: test the
// build of it that bin/oh-hai runs.
const { codeCacheFile, commandLabel, HOT_PATH_RAN, readCacheFile } = createRequire(import.meta.url)('../../../dist/cli/launch.cjs') as typeof Launch;

describe('the launcher picks the bundle and cache by the top-level command', () => {
  it.each([
    [['bridge'], 'bridge'],
    [['bridge', '--wait', '0'], 'bridge'],
    [['--raw', 'bridge'], 'bridge'],
    [['bridge', 'status'], 'bridge'],
    [[], 'cli'],
    [['--version'], 'cli'],
    [['session', 'status'], 'cli'],
    [['help', 'bridge'], 'cli'],
    [['__consumer', '--mode', 'direct'], 'cli'],
  ])('%j → %s', (argv, label) => {
    expect(commandLabel(argv)).toBe(label);
  });
});

describe('the code cache lives in the user cache directory, keyed on the bundle, Node and the command', () => {
  const name = `abc123-${process.version}-${process.arch}-bridge.v8`;
  it.each([
    [{ XDG_CACHE_HOME: '/x/cache', HOME: '/home/u' }, path.join('/x/cache', 'oh-hai', 'code-cache', name)],
    [{ HOME: '/home/u' }, path.join('/home/u', '.cache', 'oh-hai', 'code-cache', name)],
    // A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
    [{ XDG_CACHE_HOME: 'rel', HOME: '/home/u' }, path.join('/home/u', '.cache', 'oh-hai', 'code-cache', name)],
    [{}, null],
    [{ HOME: 'relative' }, null],
  ])('%j', (env, file) => {
    expect(codeCacheFile(env, 'abc123', 'bridge')).toBe(file);
  });
});

describe("a cache file is a count of the runs that wrote it, then V8's data", () => {
  it('reads the count, whether a run that had run its hot path wrote it (the high bit), and the data; nothing from a file too short to hold both', () => {
    expect(readCacheFile(Buffer.from([2, 7, 8, 9]))).toEqual({ writes: 2, hot: false, data: Buffer.from([7, 8, 9]) });
    expect(readCacheFile(Buffer.from([0x83, 7]))).toEqual({ writes: 3, hot: true, data: Buffer.from([7]) });
    expect(readCacheFile(Buffer.from([1]))).toBeUndefined();
    expect(readCacheFile(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('a run tells the launcher its hot path ran', () => {
  it('under the key the launcher listens on (src/util/code-cache.ts names it apart: the launcher is built on its own)', () => {
    expect(hotPathKey).toBe(HOT_PATH_RAN);
  });
});
