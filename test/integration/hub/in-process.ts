import path from 'node:path';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';

/** A reference Hub in this process on a free loopback port, its data in `<dir>/hub`: for tests that count what its store runs. */
export const inProcessHub = (dir: string): Promise<HubServer> =>
  createHubServer({
    config: { ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: 'k', version: 'test' }), port: 0 },
    clock: systemClock,
    pid: process.pid,
    log: () => undefined,
  });
