import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startAdmin } from '../../../src/hub/server/admin.js';
import type { Store } from '../../../src/hub/server/sql.js';

// A scrape of a Hub holding 10,000 streams walked every socket five times with prom-client's
// defaults (/proc/self/fd listed, the active handles twice, the active resources twice): 30 ms of
// one loop turn. These check what a scrape walks, not how long it takes (docs/deploy.md, session 19, scrape11).
describe('/metrics scrape', () => {
  afterEach(() => vi.restoreAllMocks());

  it('lists the loop resources once and neither the descriptors nor the handles', async () => {
    const admin = await startAdmin(
      { host: '127.0.0.1', port: 0 },
      {
        store: {} as Store,
        openStreams: () => 3,
        pushTurns: () => ({ largest: 0, deferred: 0 }),
        heldRequests: () => ({ mail: 0, message: 0 }),
        connections: () => null,
        database: null,
      },
    );
    try {
      const handles = vi.spyOn(process as unknown as { _getActiveHandles: () => unknown[] }, '_getActiveHandles');
      const resources = vi.spyOn(process, 'getActiveResourcesInfo');
      const listed = vi.spyOn(fs, 'readdirSync');
      const text = await (await fetch(`${admin.url}/metrics`)).text();
      expect(handles).not.toHaveBeenCalled();
      expect(resources).toHaveBeenCalledTimes(1);
      // Linux 6.2 and later count /proc/self/fd in its size; an older kernel lists it.
      if (fs.statSync('/proc/self/fd', { throwIfNoEntry: false })?.size) expect(listed).not.toHaveBeenCalled();
      const open = Number(/^oh_hai_hub_process_process_open_fds (\d+)$/m.exec(text)?.[1]);
      const total = Number(/^oh_hai_hub_process_nodejs_active_resources_total (\d+)$/m.exec(text)?.[1]);
      const byType = [...text.matchAll(/^oh_hai_hub_process_nodejs_active_resources\{type="[^"]+"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
      if (process.platform === 'linux') expect(open).toBeGreaterThan(2);
      expect(total).toBeGreaterThan(0);
      expect(byType).toBe(total);
      expect(text).toMatch(/^oh_hai_hub_open_streams 3$/m);
      expect(text).toMatch(/^oh_hai_hub_process_nodejs_eventloop_lag_max_seconds /m);
      expect(text).toMatch(/^# TYPE oh_hai_hub_process_nodejs_gc_duration_seconds histogram$/m);
    } finally {
      await admin.close();
    }
  });
});
