import { describe, expect, it } from 'vitest';
import { FAST_HUB, useBenches } from './harness.js';
import { startSseProxy, startFailAfterOpenProxy, type ProxyAnswer } from './sse-proxy.js';

/**
 * Finding 4: a hostile Hub's strings — error code and message, a non-MA2H error body, a
 * reconnect reason — reach bridge.log, stderr and consumer.json's stop message escaped:
 * no ESC (CSI, OSC 52 clipboard, OSC 0 title), C1 control or bidi override survives raw.
 */
const world = useBenches({ args: FAST_HUB });

const HOSTILE = '\u001b[2J\u001b]52;c;cHduZWQ=\u0007\u001b]0;title\u0007\u009b31m\u0085\u202eevil\u2066\nFAKE LINE';
/** Every character a terminal could act on, except the line break and tab a sink lays out itself. */
const RAW_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const stream = (req: { url?: string }) => (req.url ?? '').startsWith('/v1/inbox/stream');

const CASES: [string, (hub: string) => Promise<{ url: string; close(): Promise<void> }>][] = [
  [
    'an MA2H error code and message',
    (hub) =>
      startSseProxy(
        hub,
        () => (c, out) => out.write(c),
        (req): ProxyAnswer | null =>
          stream(req)
            ? { status: 503, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { code: `x${HOSTILE}`, message: HOSTILE } }) }
            : null,
      ),
  ],
  [
    'a non-MA2H error body',
    (hub) =>
      startSseProxy(
        hub,
        () => (c, out) => out.write(c),
        (req) => (stream(req) ? { status: 502, headers: { 'content-type': 'text/html' }, body: `<h1>${HOSTILE}</h1>` } : null),
      ),
  ],
  ['a reconnect reason', (hub) => startFailAfterOpenProxy(hub, `event: reconnect\ndata: ${JSON.stringify({ reason: HOSTILE })}\n\n`)],
];

describe('Hub-supplied strings on every path to a terminal or a log', () => {
  it.each(CASES)('%s: bridge.log, stderr (direct mode) and the stop message carry it escaped', async (_what, proxyFor) => {
    const proxy = await proxyFor(world.hub.url);
    try {
      const bench = await world.bench();
      bench.settings({ hub: proxy.url, max_retries: 1 });
      const r = await bench.runToEnd(['--mode', 'direct']);
      expect(r.code, bench.report()).toBe(13);
      const stop = bench.consumer()!.stop_message ?? '';
      for (const [where, text] of [
        ['bridge.log', bench.log()],
        ['stderr', r.stderr],
        ['stop_message', stop],
      ] as const) {
        expect(text, `${where} carries the Hub's string`).toContain('\\u001b');
        expect(RAW_UNSAFE.exec(text), `${where} carries a raw control`).toBeNull();
        expect(text, `${where}: the Hub's line break cannot start a line of its own`).not.toMatch(/^FAKE LINE/m);
      }
    } finally {
      await proxy.close();
    }
  });
});
