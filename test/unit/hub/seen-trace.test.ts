import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

// bench/push-tail.mjs lines each slow push up against the presence write's statements under way at its moment: it needs
// each statement's start, rows and length in the push trace (ev.seen), not only the write's start (ev.presence).
// trace.ts reads its environment once, when it is loaded: the module is loaded afresh with the trace on.

describe('the push trace of the presence write', () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('has one ev.seen line per statement: its start, its rows and how long it took', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'seen-trace-'));
    dirs.push(dir);
    const file = path.join(dir, 'trace');
    vi.resetModules();
    vi.stubEnv('OH_HAI_TRACE', file);
    vi.stubEnv('OH_HAI_TRACE_HOPS', '');
    const { streamsSeen } = await import('../../../src/hub/server/sessions.js');
    const statements: number[] = [];
    const store = {
      as: () => ({
        once: async (_sql: string, params: ReadonlyArray<unknown>) => {
          statements.push(params.length);
        },
      }),
    };
    const held = Array.from({ length: 1200 }, (_, i) => ({ sessionId: `sess_${i}`, home: null }));
    await streamsSeen(store as never, held);
    expect(statements).toEqual([500, 500, 200]);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.map((l) => l.split(' ').slice(1, 3).join(' ').replace(/:\d+$/, ''))).toEqual(['ev.seen 500', 'ev.seen 500', 'ev.seen 200']);
    for (const l of lines) expect(l).toMatch(/^\d+ ev\.seen \d+:\d+ -$/);
  });
});
