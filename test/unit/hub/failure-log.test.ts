import { describe, expect, it } from 'vitest';
import { databaseMigrating } from '../../../src/hub/server/database-errors.js';
import { FailureLog, REMIND_MS, type BackgroundWork } from '../../../src/hub/server/failure-log.js';
import { hubLogSink, type LogFields } from '../../../src/hub/server/log-sink.js';
import { fakeClock } from '../../../src/util/clock.js';

// A timer-driven work's failures are logged when they start, at most once a minute while they
// go on, and when the work works again (session 22, quiet22): the log of a database down for
// ten minutes is three or so lines per work, not one per period.

const START = Date.parse('2026-12-04T12:00:00.000Z');

function logged() {
  const clock = fakeClock(START);
  const lines: Array<{ line: string; fields: LogFields | undefined }> = [];
  const counted: BackgroundWork[] = [];
  const log = new FailureLog({ work: 'sweep', what: 'the sweep', clock, log: (line, fields) => lines.push({ line, fields }), counted: (w) => counted.push(w) });
  const pass = (ms: number) => clock.advance(ms);
  return { clock, lines, counted, log, pass };
}

describe('FailureLog', () => {
  it('logs the first failure with its cause, a reminder with the count at most once a minute, and the recovery with the count and the time', () => {
    const { lines, counted, log, pass } = logged();
    log.worked();
    expect(lines).toEqual([]);

    // A failure a second for 150 s: the first, then one reminder a minute.
    for (let i = 0; i < 150; i++) {
      log.failed(new Error(`connect ECONNREFUSED 127.0.0.1:5432 (#${i + 1})`));
      pass(1000);
    }
    expect(counted).toHaveLength(150);
    expect(lines.map((l) => l.line)).toEqual([
      'hub: the sweep failed: connect ECONNREFUSED 127.0.0.1:5432 (#1) (logged again at most once a minute while it keeps failing)',
      'hub: the sweep still failing: 61 failures since 2026-12-04T12:00:00.000Z; the last: connect ECONNREFUSED 127.0.0.1:5432 (#61)',
      'hub: the sweep still failing: 121 failures since 2026-12-04T12:00:00.000Z; the last: connect ECONNREFUSED 127.0.0.1:5432 (#121)',
    ]);
    expect(lines.map((l) => l.fields)).toEqual([
      { event: 'background_failing', work: 'sweep', since: '2026-12-04T12:00:00.000Z', cause: 'connect ECONNREFUSED 127.0.0.1:5432 (#1)' },
      { event: 'background_still_failing', work: 'sweep', failures: 61, since: '2026-12-04T12:00:00.000Z', cause: 'connect ECONNREFUSED 127.0.0.1:5432 (#61)' },
      {
        event: 'background_still_failing',
        work: 'sweep',
        failures: 121,
        since: '2026-12-04T12:00:00.000Z',
        cause: 'connect ECONNREFUSED 127.0.0.1:5432 (#121)',
      },
    ]);

    lines.length = 0;
    log.worked();
    log.worked();
    expect(lines).toEqual([
      {
        line: 'hub: the sweep working again after 150 failure(s) over 150 s',
        fields: { event: 'background_working_again', level: 'info', work: 'sweep', failures: 150, since: '2026-12-04T12:00:00.000Z', seconds: 150 },
      },
    ]);

    // The next run starts afresh: its own first line, its own count.
    lines.length = 0;
    log.failed(new Error('again'));
    pass(REMIND_MS - 1);
    log.failed('still');
    log.worked();
    expect(lines.map((l) => l.line)).toEqual([
      'hub: the sweep failed: again (logged again at most once a minute while it keeps failing)',
      'hub: the sweep working again after 2 failure(s) over 60 s',
    ]);
  });

  it("names where the failure was, and leaves another version's migration to the migration watch (not logged, not counted)", () => {
    const { lines, counted, log } = logged();
    log.failed(databaseMigrating('a migration holds the database tables'));
    log.worked();
    expect(lines).toEqual([]);
    expect(counted).toEqual([]);
    log.failed(new Error('Connection terminated unexpectedly'), 'on session sess_1');
    expect(lines[0]!.line).toBe(
      'hub: the sweep failed: on session sess_1: Connection terminated unexpectedly (logged again at most once a minute while it keeps failing)',
    );
    // The database URL's password, in the line and in its fields.
    const redacted: Array<LogFields | undefined> = [];
    const listener = new FailureLog({
      work: 'listener',
      what: 'the database listener',
      clock: fakeClock(START),
      log: (_, f) => redacted.push(f),
      redact: (t) => t.replaceAll('s3cret', '***'),
      counted: () => undefined,
    });
    listener.failed(new Error('password s3cret refused'));
    expect(redacted[0]!.cause).toBe('password *** refused');
  });
});

describe('the JSON log', () => {
  it("puts an event's fields beside msg, at its level, and redacts them like the message", () => {
    const out: string[] = [];
    const err: string[] = [];
    const sink = hubLogSink(
      'json',
      { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) }, clock: fakeClock(START) } as never,
      (t) => t.replaceAll('s3cret', '***'),
    );
    sink.err('hub: x failed: password s3cret', { event: 'background_failing', work: 'sweep', cause: 'password s3cret' });
    sink.err('hub: x working again', { event: 'background_working_again', level: 'info', work: 'sweep', failures: 3 });
    sink.err('hub: plain');
    expect(err.map((l) => JSON.parse(l) as unknown)).toEqual([
      { ts: '2026-12-04T12:00:00.000Z', level: 'error', msg: 'hub: x failed: password ***', event: 'background_failing', work: 'sweep', cause: 'password ***' },
      { ts: '2026-12-04T12:00:00.000Z', level: 'info', msg: 'hub: x working again', event: 'background_working_again', work: 'sweep', failures: 3 },
      { ts: '2026-12-04T12:00:00.000Z', level: 'error', msg: 'hub: plain' },
    ]);
    expect(out).toEqual([]);
  });
});
