import { alignRows, PLAIN, type TerminalFacts } from '../terminal/index.js';

/**
 * What doctor found, as data: one Check per line, the self-test's steps, and the overall
 * verdict. Rendering (text or the --json envelope) and the exit code are derived from this
 * and nothing else, so the two outputs can never disagree.
 */

/** `skip`: not run, because a check it depends on did not pass (that one says why). */
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export type Verdict = 'pass' | 'warn' | 'fail';

/** Measured values, named in docs/doctor.md; instants are ISO strings, durations ms on our clock. */
export type Measured = Record<string, string | number | boolean | null | string[]>;

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** Present on every check that did not pass or skip: what to do. */
  fix?: string;
  measured?: Measured;
}

export const STEP_NAMES = ['register', 'send', 'drain', 'verify', 'ack', 'reachability', 'close'] as const;
export type StepName = (typeof STEP_NAMES)[number];

export interface Step {
  name: StepName;
  status: 'pass' | 'fail' | 'skip';
  /** How long the step took on our monotonic clock; null when skipped. */
  ms: number | null;
  detail: string;
  fix?: string;
}

export interface SelfTestReport {
  /** Worst of the steps and the bridge checks. */
  status: Verdict;
  client_key: string;
  /** The throwaway session, once registered. */
  session: string | null;
  steps: Step[];
  /** Names of the failing steps and bridge checks. */
  failed: string[];
}

export interface DoctorReport {
  status: Verdict;
  checks: Check[];
  self_test?: SelfTestReport;
}

const RANK: Record<CheckStatus, number> = { skip: 0, pass: 0, warn: 1, fail: 2 };

export function worst(statuses: readonly CheckStatus[]): Verdict {
  const top = Math.max(0, ...statuses.map((s) => RANK[s]));
  return top === 2 ? 'fail' : top === 1 ? 'warn' : 'pass';
}

export const check = (name: string, status: CheckStatus, detail: string, extra: { fix?: string; measured?: Measured } = {}): Check => ({
  name,
  status,
  detail,
  ...(extra.fix !== undefined && status !== 'pass' && status !== 'skip' ? { fix: extra.fix } : {}),
  ...(extra.measured !== undefined ? { measured: extra.measured } : {}),
});

export const skipped = (name: string, because: string): Check => check(name, 'skip', `not checked: ${because}`);

export const BRIDGE_CHECKS = ['bridge consumer', 'bridge session', 'bridge reader', 'bridge unread'] as const;

export function buildReport(checks: Check[], selfTest?: { client_key: string; session: string | null; steps: Step[] }): DoctorReport {
  if (!selfTest) return { status: worst(checks.map((c) => c.status)), checks };
  const bridge = checks.filter((c) => c.name === 'bridge' || (BRIDGE_CHECKS as readonly string[]).includes(c.name));
  const parts = [...selfTest.steps, ...bridge];
  const self: SelfTestReport = {
    status: worst(parts.map((p) => p.status)),
    client_key: selfTest.client_key,
    session: selfTest.session,
    steps: selfTest.steps,
    failed: parts.filter((p) => p.status === 'fail').map((p) => p.name),
  };
  return { status: worst([...checks.map((c) => c.status), self.status]), checks, self_test: self };
}

export const failingNames = (r: DoctorReport): string[] => [
  ...r.checks.filter((c) => c.status === 'fail').map((c) => c.name),
  ...(r.self_test?.steps.filter((s) => s.status === 'fail').map((s) => `self-test ${s.name}`) ?? []),
];

/** One check or self-test step as table cells: status, name, the detail with its `fix:` on the line below. */
type Row = { status: string; name: string; detail: string; fix: string | undefined };

/** In a pipe (and for scripts), the layout doctor always had: names padded to the longest, `fix:` under the detail. */
function pipeLines(rows: readonly (Row | string)[]): string[] {
  const width = Math.max(0, ...rows.map((x) => (typeof x === 'string' ? 0 : x.name.length)));
  return rows.flatMap((x) => {
    if (typeof x === 'string') return [x];
    const out = [`${x.status.padEnd(5)} ${x.name.padEnd(width)} ${x.detail}`];
    if (x.fix !== undefined) out.push(`${' '.repeat(6 + width + 1)}fix: ${x.fix}`);
    return out;
  });
}

/** On a terminal, one aligned table (docs/terminal.md): a long detail wraps inside its column instead of running off. */
function terminalLines(rows: readonly (Row | string)[], columns: number | null): string[] {
  const checks = rows.filter((x): x is Row => typeof x !== 'string');
  const laid = alignRows(
    checks.map((x) => [x.status, x.name, x.fix === undefined ? x.detail : `${x.detail}\nfix: ${x.fix}`]),
    columns,
  );
  let next = 0;
  return rows.flatMap((x) => (typeof x === 'string' ? [x] : laid[next++]!));
}

/** One line per check (and a `fix:` line under anything not passing), then the verdict. */
export function renderText(r: DoctorReport, facts: TerminalFacts = PLAIN): string {
  const setup = r.checks.filter((c) => !c.name.startsWith('bridge'));
  const bridge = r.checks.filter((c) => c.name.startsWith('bridge'));
  const rows: (Row | string)[] = setup.map((c) => ({ status: c.status, name: c.name, detail: c.detail, fix: c.fix }));
  if (r.self_test) {
    const t = r.self_test;
    rows.push(`self-test: a throwaway session (client_key ${t.client_key}), closed at the end`);
    for (const s of t.steps) {
      const took = s.ms === null ? '' : `${Math.round(s.ms)} ms — `;
      rows.push({ status: s.status, name: s.name, detail: `${took}${s.detail}`, fix: s.fix });
    }
  }
  rows.push(...bridge.map((c) => ({ status: c.status, name: c.name, detail: c.detail, fix: c.fix })));
  const out = facts.tty ? terminalLines(rows, facts.columns) : pipeLines(rows);
  const failing = failingNames(r);
  const warned = r.checks.filter((c) => c.status === 'warn').map((c) => c.name);
  if (r.status === 'fail') out.push(`doctor: FAIL — failing: ${failing.join(', ')}`);
  else if (r.status === 'warn') out.push(`doctor: pass with warnings — ${warned.join(', ')}`);
  else out.push('doctor: pass');
  return out.join('\n') + '\n';
}

export const renderJson = (r: DoctorReport): string => JSON.stringify(r) + '\n';
