import { describe, expect, it } from 'vitest';
import { parseSessionRecord, readRecord, sessionStateDir, stateKey } from '../../../src/spool/index.js';
import { collect, startOhHai } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';
import { startSseProxy, type SseSink } from '../consumer/sse-proxy.js';
import { as, BRIDGE, stopAll, useParties } from '../messaging/world.js';
import { consumerOf } from './world.js';

/**
 * A Hub that answers each stream's `open` and then loses the socket (docs/bridge.md "A Hub
 * that opens and drops"): the waiting bridge says once that its connection cannot reach the
 * Hub and at most once that it is back, not a pair of lines per flap, and the mail sent
 * meanwhile is printed once the Hub serves again.
 */
const STARTS = /oh-hai bridge: the background connection cannot reach the Hub \(.+\)\. It is retrying with backoff/;
const BACK = /oh-hai bridge: the background connection reached the Hub again/;
const count = (text: string, line: RegExp): number => text.match(new RegExp(line.source, 'g'))?.length ?? 0;

/** In front of the Hub: passes every stream, or passes each stream's `open` and drops the stream 200 ms later. */
async function flappingProxy(target: string) {
  let flapping = false;
  let flaps = 0;
  const open = new Set<SseSink>();
  const proxy = await startSseProxy(target, () => {
    if (!flapping) {
      let sink: SseSink | null = null;
      return (chunk, out) => {
        if (sink === null) open.add((sink = out));
        out.write(chunk);
      };
    }
    let seen = '';
    let opened = false;
    return (chunk, out) => {
      if (opened) return;
      seen += chunk;
      const ev = /(^|\n)event: open\n[^]*?\n\n/.exec(seen);
      if (!ev) return;
      opened = true;
      flaps += 1;
      // The open only: whatever the Hub sends after it never arrives.
      out.write(seen.slice(0, ev.index + ev[0].length));
      setTimeout(() => out.end(), 200);
    };
  });
  return {
    url: proxy.url,
    close: proxy.close,
    get flaps() {
      return flaps;
    },
    flap(on: boolean) {
      flapping = on;
      if (!on) return;
      // The streams open now are dropped: the connection's next attempts meet the flapping.
      for (const s of open) s.end();
      open.clear();
    },
  };
}

describe('a Hub that opens streams and drops them', () => {
  const world = useParties(['alice', 'bob']);

  it('a waiting run says once that the connection lost the Hub, not once per flap, and nothing sent meanwhile is lost', async () => {
    const proxy = await flappingProxy(world.hub.url);
    // Short delays, and a budget the flapping cannot spend (an open is not progress).
    const bob = {
      ...world.bob,
      env: { ...world.bob.env, MA2H_HUB_URL: proxy.url, OH_HAI_BACKOFF_MIN_MS: '100', OH_HAI_BACKOFF_MAX_MS: '300', OH_HAI_MAX_RETRIES: '1000' },
    };
    const child = startOhHai([...BRIDGE, '--wait', '600'], { env: { ...bob.env, MA2H_AGENT_SESSION_ID: 'bob-flap' } });
    const done = collect(child, 120_000);
    let stderr = '';
    child.stderr?.on('data', (d: string) => (stderr += d));
    try {
      const dir = sessionStateDir(bob.stateRoot, stateKey(proxy.url, bob.id, 'bob-flap'));
      const session = await waitFor(
        () => {
          const r = readRecord(dir, 'session.json', parseSessionRecord);
          return r.state === 'ok' ? r.value : null;
        },
        { timeoutMs: 40_000, what: 'the session to be registered' },
      );
      await waitFor(() => consumerOf(dir)?.state === 'running' && consumerOf(dir)?.retrying === undefined, { what: 'the connection to be connected' });

      proxy.flap(true);
      await waitFor(() => STARTS.test(stderr), { timeoutMs: 30_000, what: 'the line that the connection cannot reach the Hub' });
      await waitFor(() => proxy.flaps >= 3, { timeoutMs: 30_000, what: 'three streams opened and dropped' });
      const sent = await as(world.alice, null, ['send', '--to', session.address, 'sent while the Hub flapped']);
      expect(sent.code, sent.stderr).toBe(0);
      const flapsAtSend = proxy.flaps;
      await waitFor(() => proxy.flaps >= flapsAtSend + 3, { timeoutMs: 30_000, what: 'three more streams opened and dropped' });
      // Every flap so far: still the one line, and no "back".
      expect(count(stderr, STARTS)).toBe(1);
      expect(count(stderr, BACK)).toBe(0);

      proxy.flap(false);
      const r = await done;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('sent while the Hub flapped');
      expect(count(r.stderr, STARTS)).toBe(1);
      expect(count(r.stderr, BACK)).toBeLessThanOrEqual(1);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await done.catch(() => undefined);
      await stopAll(bob);
      await proxy.close();
    }
  });
});
