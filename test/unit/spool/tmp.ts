import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const made: string[] = [];

/** A fresh temp directory removed after the test. */
export function tempDir(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-spool-'));
  made.push(d);
  return d;
}

afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});
