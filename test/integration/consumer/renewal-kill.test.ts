import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSessionRecord } from '../../../src/spool/index.js';
import { withSeed } from '../../helpers/seed.js';
import { expectEachAcknowledgedOnce, FAST_HUB, hubCall, useBenches, waitFor } from './harness.js';

/**
 * A lease renewal rewrites session.json whole but without fsyncing the rename into the
 * directory (docs/consumer.md "What a renewal's write owes"): every ack renews, two per
 * message. SIGKILL the connection at random instants while acks renew it: session.json must
 * always read whole, name the same session, and never go back to an earlier renewal; the next
 * connection adopts that session (no address change is spooled), and every message arrives
 * once. Seeded: OH_HAI_CRASH_SEED=<n> repeats a run.
 */
const TRIALS = 12;
const BURST = 6;

const world = useBenches({ args: FAST_HUB }, { logTail: 60 });

const exited = (p: ChildProcess): Promise<void> =>
  p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SIGKILL of the connection while acks renew the lease', () => {
  it(`${TRIALS} trials: session.json stays whole, the same session, never an earlier renewal; the session is adopted, nothing lost`, async () => {
    await withSeed('renewal kill run', async (rand) => {
      const bench = await world.bench();
      bench.settings({ max_retries: 1000 });
      bench.attend();
      let consumer = bench.start();
      await bench.waitRunning();
      const first = bench.session()!;
      const file = path.join(bench.dir, 'session.json');
      let lastRenewal = first.renewed_at;
      let ackRenewalsSeen = 0;
      const sent: string[] = [];
      for (let trial = 0; trial < TRIALS; trial += 1) {
        for (let i = 0; i < BURST; i += 1) sent.push(await bench.notify(`trial ${trial} message ${i}`));
        // The reader's part: pass what is spooled, so acks of both kinds renew the lease.
        const spooled = bench.spool().at(-1);
        if (spooled) bench.advanceCursor(spooled.seq);
        await pause(rand() * 120);
        consumer.kill('SIGKILL');
        await exited(consumer);
        const read = parseSessionRecord(JSON.parse(readFileSync(file, 'utf8')));
        expect(read.ok, `trial ${trial}: session.json reads whole`).toBe(true);
        if (!read.ok) return;
        expect(read.value.id, `trial ${trial}: the same session`).toBe(first.id);
        expect(read.value.renewed_at, `trial ${trial}: no earlier renewal`).toBeGreaterThanOrEqual(lastRenewal);
        // Renewed after the connection came up (an ack, or a reconnect at the hold bound) and written before the kill.
        if (read.value.renewed_at > lastRenewal) ackRenewalsSeen += 1;
        consumer = bench.start();
        // Running again, its stream open's renewal written, before the next burst, so each kill lands among acks.
        const pid = consumer.pid;
        const killedAt = read.value.renewed_at;
        await waitFor(() => bench.consumer()?.pid === pid && bench.consumer()?.state === 'running' && bench.session()!.renewed_at > killedAt, {
          what: 'the next connection running, its stream open recorded',
        });
        lastRenewal = bench.session()!.renewed_at;
      }
      // Every message spooled exactly once, acknowledged at the Hub once the cursor passed it.
      await expectEachAcknowledgedOnce(bench, sent, () => {
        const last = bench.spool().at(-1);
        if (last) bench.advanceCursor(last.seq);
      });
      expect(
        bench.spool().filter((l) => l.type === 'transition'),
        'the session was adopted every time: no address change',
      ).toEqual([]);
      expect(bench.session()!.id).toBe(first.id);
      const s = await hubCall(world.hub, 'GET', `/v1/sessions/${first.id}`, { token: bench.me.token });
      expect(s.body.session.state).toBe('active');
      // The kills really landed among renewals.
      expect(ackRenewalsSeen).toBeGreaterThan(0);
      consumer.kill('SIGKILL');
      await exited(consumer);
    });
  }, 180_000);
});
