import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

// trace.ts reads its environment once, when it is loaded: each case loads it afresh.
async function traceWith(env: Record<string, string>) {
  vi.resetModules();
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
  return import('../../../src/util/trace.js');
}

describe('the push-latency trace', () => {
  const dirs: string[] = [];
  const file = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'trace-test-'));
    dirs.push(dir);
    return path.join(dir, 'trace');
  };
  afterEach(() => {
    vi.unstubAllEnvs();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('appends every hop when OH_HAI_TRACE_HOPS is unset', async () => {
    const f = file();
    const t = await traceWith({ OH_HAI_TRACE: f, OH_HAI_TRACE_HOPS: '' });
    t.hop('hub.committed', 'msg_1', 5n);
    t.hop('hub.written', 'msg_1');
    const lines = readFileSync(f, 'utf8').trim().split('\n');
    expect(lines[0]).toBe('5 hub.committed msg_1 -');
    expect(lines[1]).toMatch(/^\d+ hub\.written msg_1 \d+$/);
  });

  it('appends only the hops OH_HAI_TRACE_HOPS names (the bench anchors at the COMMIT with nothing else on the push path)', async () => {
    const f = file();
    const t = await traceWith({ OH_HAI_TRACE: f, OH_HAI_TRACE_HOPS: 'hub.committed,bench.x' });
    t.hop('hub.paged', 'msg_1');
    t.hop('hub.committed', 'msg_1', 7n);
    t.hop('hub.written', 'msg_1');
    expect(readFileSync(f, 'utf8')).toBe('7 hub.committed msg_1 -\n');
  });
});
