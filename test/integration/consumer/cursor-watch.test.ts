import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CursorWriter, writeCursor, type Cursor } from '../../../src/spool/index.js';
import { useBenches, waitFor, type Bench } from './harness.js';

/**
 * The connection's cursor watch against a reader printing a burst (src/consumer/cursor-watch.ts):
 * the reader steps cursor.json in place once per record, and a connection that took every step's
 * inotify event ran once per record on the reader's CPU (docs/performance.md "Warm bridge (session
 * 23, warm23)"). A real connection and a real Hub; this test is the reader. The Hub is stopped
 * (SIGSTOP) for the burst, so the ack round the first step asks for is held for all of it: a
 * connection that closes its watch for the round sleeps through the burst, one that keeps it
 * wakes per step. Its wakes are its main thread's voluntary context switches (/proc, Linux).
 * The heartbeat and the safety poll are set far beyond the test's deadlines, so the last step
 * acknowledged at the Hub after the burst can only be the re-armed watch's round.
 */
const STEPS = 60;
const HOUR_MS = '3600000';

const world = useBenches({});

/** The main thread's voluntary context switches: each one a sleep the process was woken from. */
function wakes(pid: number): number {
  const m = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no voluntary_ctxt_switches in /proc/${pid}/status`);
  return Number(m[1]);
}

/** The main thread's state is S: asleep, in an interruptible wait (for the connection, its event loop's). */
const asleep = (pid: number): boolean => /\) S /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

/** Each spooled record's cursor: its seq and the byte offset just past its line. */
function cursors(bench: Bench): Cursor[] {
  const out: Cursor[] = [];
  let offset = 0;
  for (const line of readFileSync(`${bench.dir}/bridge.ndjson`, 'utf8').split('\n')) {
    if (line === '') break;
    offset += Buffer.byteLength(line, 'utf8') + 1;
    out.push({ seq: (JSON.parse(line) as { seq: number }).seq, offset });
  }
  return out;
}

describe.runIf(process.platform === 'linux')('the connection watching the cursor during a printed burst', () => {
  it(`${STEPS} in-place steps during one ack round wake it a few times, not once each; the last is acknowledged promptly after, and so is a step once it is idle`, async () => {
    const bench = await world.bench({ env: { OH_HAI_CURSOR_POLL_MS: HOUR_MS, OH_HAI_HEARTBEAT_MS: HOUR_MS } });
    bench.settings();
    bench.attend();
    // The file the reader steps in place, there before the connection watches it.
    writeCursor(bench.dir, { seq: 0, offset: 0 });
    const consumer = bench.start();
    await bench.waitRunning();
    const ids: string[] = [];
    for (let i = 1; i <= STEPS + 1; i++) ids.push(await bench.notify(`burst ${i}`));
    await waitFor(async () => (await Promise.all(ids.map(async (id) => (await bench.track(id)).state))).every((s) => s === 'delivered'), {
      what: 'every record spooled and acked delivered',
    });
    const all = cursors(bench);
    expect(all.map((c) => c.seq)).toEqual(ids.map((_, i) => i + 1));
    const steps = all.slice(0, STEPS);

    // Each step waits for the connection to be asleep again (its main thread in state S): a wake is
    // taken in the writer's pwrite (the connection is runnable, R, when it returns), so a connection
    // that takes every event takes each one on its own and none coalesces into the next.
    const pid = consumer.pid!;
    const reader = new CursorWriter(bench.dir);
    const hub = world.hub.proc;
    hub.kill('SIGSTOP');
    let woken: number;
    try {
      const before = wakes(pid);
      for (const c of steps) {
        reader.step(c);
        await waitFor(() => asleep(pid), { what: 'the connection asleep after a step' });
      }
      reader.commit();
      woken = wakes(pid) - before;
    } finally {
      hub.kill('SIGCONT');
    }
    expect(woken, `the connection woke ${woken} times during ${STEPS} steps`).toBeLessThan(STEPS / 4);
    await waitFor(async () => (await bench.track(ids[STEPS - 1]!)).state === 'acknowledged', {
      what: 'the last step acknowledged, with no poll or heartbeat to ask',
    });
    const states = await Promise.all(ids.slice(0, STEPS).map(async (id) => (await bench.track(id)).state));
    expect(states.every((s) => s === 'acknowledged')).toBe(true);
    expect((await bench.track(ids[STEPS]!)).state, 'nothing acknowledged past the cursor').toBe('delivered');

    // Idle again, the watch is back: one more step is acknowledged with nothing else to ask for it.
    await waitFor(() => asleep(pid), { what: 'the connection asleep after the rounds' });
    reader.step(all[STEPS]!);
    reader.commit();
    await waitFor(async () => (await bench.track(ids[STEPS]!)).state === 'acknowledged', { what: 'a step after the burst acknowledged by the watch' });
  });
});
