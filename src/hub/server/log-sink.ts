import type { Clock } from '../../util/clock.js';
import type { Output } from '../../util/output.js';
import type { AccessRecord } from './core.js';

export type LogFormat = 'text' | 'json';

/**
 * What a JSON line carries beside `msg` for an event an operator's tooling matches on (a
 * background work failing, working again: failure-log.ts): stable names, where the message's
 * wording may change. A text line is the message alone.
 */
export interface LogFields {
  event: string;
  /** `error` unless said. */
  level?: 'info' | 'error';
  [field: string]: string | number | undefined;
}

/** The Hub's log of errors and events; `fields` go into the JSON line. */
export type HubLog = (line: string, fields?: LogFields) => void;

export interface HubLogSink {
  /** What the operator reads at start and stop (stdout). */
  out(line: string): void;
  /** Errors and events (stderr). */
  err: HubLog;
  /** One line per answered request; JSON logs only. */
  access: ((r: AccessRecord) => void) | undefined;
}

/** Tokens the Hub mints (`ohh_h_…`, `ohh_a_…`): never in a log line, whatever put them there. */
const TOKEN = /ohh_[ah]_[A-Za-z0-9_-]+/g;

/**
 * The Hub's log lines, as text (as before) or one JSON object per line
 * (`--log-format json`): `{"ts","level","msg"}`, plus request records. Every line goes
 * through `redact` (the database URL and password) and loses any token.
 */
export function hubLogSink(format: LogFormat, io: { stdout: Output; stderr: Output; clock: Clock }, redact: (text: string) => string): HubLogSink {
  const clean = (text: string) => redact(text).replace(TOKEN, 'ohh_[redacted]');
  if (format === 'text') {
    return { out: (l) => io.stdout.write(clean(l) + '\n'), err: (l) => io.stderr.write(clean(l) + '\n'), access: undefined };
  }
  const line = (level: 'info' | 'error', fields: Record<string, unknown>) =>
    clean(JSON.stringify({ ts: new Date(io.clock.now()).toISOString(), level, ...fields })) + '\n';
  return {
    out: (l) => io.stdout.write(line('info', { msg: l })),
    err: (l, fields) => {
      if (fields === undefined) io.stderr.write(line('error', { msg: l }));
      else {
        const { level = 'error', ...rest } = fields;
        io.stderr.write(line(level, { msg: l, ...rest }));
      }
    },
    access: (r) =>
      io.stdout.write(
        line(r.status >= 500 ? 'error' : 'info', {
          msg: 'request',
          method: r.method,
          route: r.route,
          status: r.status,
          ms: r.ms,
          client: r.client,
          remote: r.remote,
          forwarded_for: r.forwardedFor,
        }),
      ),
  };
}
