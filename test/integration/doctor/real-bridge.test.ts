import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCTOR_EXIT } from '../../../src/core/exit.js';
import { isSameProcessAlive, parseConsumerRecord, readRecord, type ConsumerRecord } from '../../../src/spool/index.js';
import { runOhHai } from '../../helpers/cli.js';
import { hubCall, startHub, type TestHub } from '../../helpers/hub.js';
import { waitFor } from '../../helpers/wait.js';
import { Bench, byName, snapshot } from './bench.js';

/**
 * Against a bridge started by the real `oh-hai bridge` (its own double-forked connection,
 * its own spool, ledger and records), doctor --self-test reports it healthy and changes
 * nothing in its entry. The connection is frozen (SIGSTOP) around the comparison so that
 * only doctor could have written anything; doctor itself never signals it.
 */

let hub: TestHub;
let b: Bench;
let consumer: ConsumerRecord | null = null;

beforeAll(async () => {
  // A hold longer than the test, so the connection does not reconnect (and rewrite session.json) mid-way.
  hub = await startHub({ args: ['--stream-max-hold-seconds', '600'] });
  // A heartbeat slower than the test (no consumer.json rewrites), judged stale only past it.
  b = await Bench.create(hub, 'real-bridge', { OH_HAI_HEARTBEAT_MS: '600000', OH_HAI_STALE_HOLDER_SECONDS: '600' });
});

afterAll(async () => {
  if (consumer && isSameProcessAlive(consumer) === 'alive') {
    process.kill(consumer.pid, 'SIGCONT');
    process.kill(consumer.pid, 'SIGTERM');
    await waitFor(() => isSameProcessAlive(consumer!) === 'dead', { what: 'the connection to stop' });
  }
  // beforeAll may have failed half-way (a Hub that never came up): clean up what exists.
  if (b) b.cleanup();
  if (hub) await hub.dispose();
});

describe('doctor --self-test against a real oh-hai bridge', () => {
  it('reports the bridge healthy and leaves its spool, cursor, ledger and records byte for byte as they were', async () => {
    const first = await runOhHai(['bridge', '--wait', '0.5'], { env: b.env });
    expect(first.code, first.stderr).toBe(0);
    const running = await waitFor(
      () => {
        const read = readRecord(b.dir, 'consumer.json', parseConsumerRecord);
        return read.state === 'ok' && read.value.state === 'running' ? read.value : null;
      },
      { what: 'the connection to record itself running' },
    );
    consumer = running;
    const address = (JSON.parse(readFileSync(path.join(b.dir, 'session.json'), 'utf8')) as { address: string }).address;

    // A peer's notify, spooled and acked delivered by the connection, but not yet read.
    const peer = await hub.mintAgent('peer');
    const sent = await hubCall(hub, 'POST', '/v1/messages', { token: peer.token, body: { to: address, intent: 'notify', text: 'for the bridge' } });
    expect(sent.status).toBe(202);
    await waitFor(async () => (await hubCall(hub, 'GET', `/v1/messages/${sent.body.message.id}`, { token: peer.token })).body?.message?.state === 'delivered', {
      what: 'the connection to spool and ack the notify',
    });
    await waitFor(() => readFileSync(path.join(b.dir, 'ledger.ndjson'), 'utf8').includes('"op":"delivered"'), {
      what: 'the ledger to record the delivered ack',
    });

    process.kill(consumer.pid, 'SIGSTOP');
    try {
      const before = snapshot(b.dir);
      const run = await b.doctor(['--self-test']);
      const after = snapshot(b.dir);

      expect([...after.keys()]).toEqual([...before.keys()]);
      for (const name of ['bridge.ndjson', 'ledger.ndjson', 'consumer.json', 'reader.json', 'session.json', 'settings.json', 'identity.json', 'bridge.log']) {
        expect(before.has(name), name).toBe(true);
        expect(after.get(name), name).toEqual(before.get(name));
      }
      expect(after).toEqual(before);

      expect(run.code, run.stdout).toBe(DOCTOR_EXIT.ok);
      const c = byName(run.report);
      expect(c['bridge consumer']).toMatchObject({ status: 'pass', measured: expect.objectContaining({ pid: consumer.pid, state: 'running' }) });
      expect(c['bridge session']).toMatchObject({ status: 'pass', detail: expect.stringContaining('is active at the Hub') });
      // The reader exited after its wait: inside the unattended bound, measured from its last heartbeat.
      expect(c['bridge reader']).toMatchObject({ status: 'pass', detail: expect.stringMatching(/inside the unattended bound/) });
      expect(c['bridge unread']).toMatchObject({ status: 'pass', measured: expect.objectContaining({ unread: 1, overdue: 0 }) });
      expect(run.report.self_test?.steps.every((s) => s.status === 'pass')).toBe(true);
      expect(isSameProcessAlive(consumer)).toBe('alive');
    } finally {
      process.kill(consumer.pid, 'SIGCONT');
    }

    // And the bridge still prints the notify the self-test never touched — and nothing of the self-test's own.
    const next = await runOhHai(['bridge', '--wait', '0.5'], { env: b.env });
    expect(next.code).toBe(0);
    expect(next.stdout).toContain('for the bridge');
    expect(next.stdout).not.toMatch(/self-test|receipt/);
  });
});
