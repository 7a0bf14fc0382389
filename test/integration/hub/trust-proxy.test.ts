import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseTrustProxy } from '../../../src/hub/server/client-address.js';
import { defaultHubConfig } from '../../../src/hub/server/config.js';
import type { AccessRecord } from '../../../src/hub/server/core.js';
import { createHubServer, type HubServer } from '../../../src/hub/server/server.js';
import { systemClock } from '../../../src/util/clock.js';
import { hubCall, startHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';

// Issue 14: whose request it is. X-Forwarded-For names the client only when the operator said
// the Hub sits behind those proxies (`--trust-proxy`); otherwise anyone could pick the address
// the logs and the sign-in throttle see. Read from the access records (what `--log-format json`
// writes) of Hubs in this process, over real HTTP on loopback.

/** A Hub in this process whose access records (what `--log-format json` writes) the test reads. */
async function hubWith(dir: string, trust: string | null): Promise<{ hub: HubServer; records: AccessRecord[] }> {
  const records: AccessRecord[] = [];
  const parsed = trust === null ? null : parseTrustProxy(trust);
  if (parsed !== null && !parsed.ok) throw new Error(parsed.reason);
  const hub = await createHubServer({
    config: { ...defaultHubConfig({ dataDir: path.join(dir, 'hub'), signingKey: 'k', version: 'test' }), port: 0 },
    clock: systemClock,
    pid: process.pid,
    log: () => undefined,
    access: (r) => records.push(r),
    ...(parsed === null ? {} : { trustProxy: parsed.value }),
  });
  return { hub, records };
}

/** The access record of a request that carried `forwarded` as its X-Forwarded-For ('' = none). */
async function recordFor(h: { hub: HubServer; records: AccessRecord[] }, forwarded: string): Promise<AccessRecord> {
  const r = await hubCall(h.hub, 'GET', '/v1/capability', { headers: forwarded === '' ? {} : { 'x-forwarded-for': forwarded } });
  expect(r.status).toBe(200);
  return waitFor(() => h.records.filter((l) => l.route === 'GET /v1/capability' && (l.forwardedFor ?? '') === forwarded).at(-1));
}

describe('the client address: the socket peer, unless the peer is a trusted proxy', () => {
  let dir: string;
  type H = Awaited<ReturnType<typeof hubWith>>;
  let untrusting: H, otherProxies: H, behindLoopback: H;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-trust-proxy-'));
    untrusting = await hubWith(path.join(dir, 'a'), null);
    otherProxies = await hubWith(path.join(dir, 'b'), '10.0.0.0/8,fd00::/8');
    behindLoopback = await hubWith(path.join(dir, 'c'), '127.0.0.1, 10.0.0.0/8');
  });
  afterAll(async () => {
    for (const h of [untrusting, otherProxies, behindLoopback]) await h?.hub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('without --trust-proxy, X-Forwarded-For is logged verbatim but never taken as the client', async () => {
    const r = await recordFor(untrusting, '203.0.113.7');
    expect(r).toMatchObject({ client: '127.0.0.1', forwardedFor: '203.0.113.7' });
    expect(r.remote).toMatch(/127\.0\.0\.1$/);
  });

  it('from a peer outside the trusted proxies, X-Forwarded-For is not believed', async () => {
    expect(await recordFor(otherProxies, '203.0.113.8')).toMatchObject({ client: '127.0.0.1' });
  });

  it('from a trusted proxy, the client is the rightmost address no trusted proxy vouches for', async () => {
    expect(await recordFor(behindLoopback, '203.0.113.9')).toMatchObject({ client: '203.0.113.9' });
    // A client's own (forged) X-Forwarded-For is to the left of what the proxy appended.
    expect(await recordFor(behindLoopback, '198.51.100.1, 203.0.113.10')).toMatchObject({ client: '203.0.113.10' });
    // A second proxy inside the trusted range is skipped.
    expect(await recordFor(behindLoopback, '203.0.113.11, 10.1.2.3')).toMatchObject({ client: '203.0.113.11' });
    // Garbage where an address belongs: believe nothing forwarded.
    expect(await recordFor(behindLoopback, 'not-an-address')).toMatchObject({ client: '127.0.0.1' });
    // No header: the peer.
    expect(await recordFor(behindLoopback, '')).toMatchObject({ client: '127.0.0.1' });
  });

  it('oh-hai hub serve --trust-proxy says whom it trusts at start', async () => {
    const h = await startHub({ args: ['--trust-proxy', '127.0.0.1, 10.0.0.0/8'] });
    try {
      expect(h.output().stdout).toMatch(/^hub: client addresses from X-Forwarded-For of 127\.0\.0\.1,10\.0\.0\.0\/8$/m);
    } finally {
      await h.dispose();
    }
  });

  it('takes the proxies from OH_HAI_HUB_TRUST_PROXY when --trust-proxy is not given, and the flag over it', async () => {
    const fromEnv = await startHub({ env: { OH_HAI_HUB_TRUST_PROXY: '10.1.2.3' } });
    const both = await startHub({ args: ['--trust-proxy', '127.0.0.1'], env: { OH_HAI_HUB_TRUST_PROXY: '10.1.2.3' } });
    try {
      expect(fromEnv.output().stdout).toMatch(/^hub: client addresses from X-Forwarded-For of 10\.1\.2\.3$/m);
      expect(both.output().stdout).toMatch(/^hub: client addresses from X-Forwarded-For of 127\.0\.0\.1$/m);
    } finally {
      await fromEnv.dispose();
      await both.dispose();
    }
    const t = tempEnv();
    try {
      const r = await runOhHai(['hub', 'serve', '--port', '0', '--data', `${t.root}/data`], { env: { ...t.env, OH_HAI_HUB_TRUST_PROXY: 'example.com' } });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/OH_HAI_HUB_TRUST_PROXY: /);
    } finally {
      t.cleanup();
    }
  });

  it('refuses a --trust-proxy that is not an address or CIDR range, naming it (exit 2)', async () => {
    const t = tempEnv();
    try {
      for (const bad of ['example.com', '10.0.0.0/33', '']) {
        const r = await runOhHai(['hub', 'serve', '--port', '0', '--data', `${t.root}/data`, '--trust-proxy', bad], { env: t.env });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(/--trust-proxy: /);
      }
    } finally {
      t.cleanup();
    }
  });
});
