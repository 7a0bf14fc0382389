import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { bridge, consumers, teardown } from './world.js';
import { deliverTampered, expectRefused } from './tamper.js';

/**
 * MA2H §7: the signature value is exactly `t=<unix seconds>,jti=<[A-Za-z0-9_-]{16,128}>,
 * alg=hmac-sha256,v1=<64 lowercase hex>`, these four fields in this order, and a jti is never
 * repeated (§4). A client cannot check the MAC, so it must check all of this.
 */

afterEach(teardown);

const SIG = /^t=(\d+),jti=([^,]*),alg=([^,]*),v1=(.*)$/;
const rewrite =
  (f: (t: string, jti: string, alg: string, v1: string) => string) =>
  (sig: string): string => {
    const m = SIG.exec(sig)!;
    return f(m[1]!, m[2]!, m[3]!, m[4]!);
  };

describe('the bridge refuses a malformed signature', () => {
  const cases: [string, (sig: string) => string][] = [
    ['fields out of order', rewrite((t, jti, alg, v1) => `jti=${jti},t=${t},alg=${alg},v1=${v1}`)],
    ['uppercase hex', rewrite((t, jti, alg, v1) => `t=${t},jti=${jti},alg=${alg},v1=${v1.toUpperCase()}`)],
    ['a 15-character jti', rewrite((t, _jti, alg, v1) => `t=${t},jti=${'j'.repeat(15)},alg=${alg},v1=${v1}`)],
    ['a jti with a character outside [A-Za-z0-9_-]', rewrite((t, jti, alg, v1) => `t=${t},jti=${jti.slice(0, 15)}.x,alg=${alg},v1=${v1}`)],
    ['another alg', rewrite((t, jti, _alg, v1) => `t=${t},jti=${jti},alg=hmac-sha512,v1=${v1}`)],
    ['a fractional t', rewrite((t, jti, alg, v1) => `t=${t}.5,jti=${jti},alg=${alg},v1=${v1}`)],
    ['a fifth field', (sig) => `${sig},v2=00`],
  ];
  for (const [what, tamper] of cases) {
    it(what, async () => {
      expectRefused(await deliverTampered(() => ({ tamperSignature: (sig) => tamper(sig) })));
    });
  }

  it('a jti repeated on a redelivery (a replay) stops the connection with 12', async () => {
    // No reader runs, so the entry stays unacknowledged and is pushed again on the next connect,
    // this time with the first delivery's signature verbatim.
    const t = await deliverTampered(() => ({ tamperSignature: (sig, previous) => previous ?? sig }), {}, false);
    await waitFor(() => t.hub.store.entry(t.entry)!.signed >= 2, { what: 'a redelivery with the same signature' });
    await waitFor(() => consumers(t.a)[0]?.state === 'stopped', { what: 'the connection to stop' });
    expect(consumers(t.a)[0]!.exit_code).toBe(12);
    // The next run prints what the connection left behind (the first, valid delivery), then exits 12.
    const r = await bridge(t.a, 'v', ['--wait', '20']);
    expect(r.code, r.stderr).toBe(12);
    expect(r.stdout).toContain('"tampered on the way"');
  });
});
