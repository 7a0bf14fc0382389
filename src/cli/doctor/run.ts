import { resolveStateRoot } from '../../spool/index.js';
import { DOCTOR_EXIT, toOutcome, usageError, type Outcome } from '../../core/index.js';
import { type CliIO } from '../io.js';
import { writeFlushed } from '../../util/output.js';
import { diagnose, diagnoseBridge, readDoctorKnobs, type DoctorKnobs } from './doctor.js';
import { buildReport, check, failingNames, renderJson, renderText, type DoctorReport } from './report.js';

/** `oh-hai doctor` flags as commander hands them over. */
export interface DoctorOptions {
  selfTest?: boolean;
  json?: boolean;
  session?: string;
  stateHome?: string;
  hub?: string;
  agent?: string;
}

/** What `oh-hai bridge status` carries over (product doc: "Removed and retired in 0.10.0"). */
export interface BridgeCheckOptions {
  session?: string;
  stateHome?: string;
  json?: boolean;
}

type Prepared = { ok: true; knobs: DoctorKnobs; stateRoot: string } | { ok: false; outcome: Outcome };

function prepare(stateHome: string | undefined, io: CliIO): Prepared {
  const knobs = readDoctorKnobs(io.env);
  if (!knobs.ok) return { ok: false, outcome: toOutcome(knobs.error) };
  const root = resolveStateRoot({ stateHome, env: io.env });
  if (!root.ok) return { ok: false, outcome: usageError(root.reason, 'bad_state_home') };
  return { ok: true, knobs: knobs.value, stateRoot: root.value };
}

async function emit(report: DoctorReport, json: boolean, io: CliIO, exitIfNotFailed: number = DOCTOR_EXIT.ok): Promise<Outcome> {
  await writeFlushed(io.stdout, json ? renderJson(report) : renderText(report, io.terminal?.stdout));
  if (report.status === 'fail')
    return { exit: DOCTOR_EXIT.failed, code: 'check_failed', style: 'plain', message: `failing: ${failingNames(report).join(', ')}` };
  return { exit: exitIfNotFailed, style: 'silent' };
}

export async function run(opts: DoctorOptions, io: CliIO): Promise<Outcome> {
  if (opts.session !== undefined && opts.selfTest !== true) {
    return usageError('--session names the bridge that --self-test inspects; add --self-test, or drop --session');
  }
  const prepared = prepare(opts.stateHome, io);
  if (!prepared.ok) return prepared.outcome;
  const report = await diagnose({
    io,
    knobs: prepared.knobs,
    stateRoot: prepared.stateRoot,
    nodeVersion: process.versions.node,
    uid: typeof process.getuid === 'function' ? process.getuid() : null,
    hub: opts.hub,
    agent: opts.agent,
    session: opts.session,
    selfTest: opts.selfTest === true,
  });
  return emit(report, opts.json === true, io);
}

/**
 * The bridge checks of `doctor --self-test` alone, read-only: what the retired
 * `oh-hai bridge status` forwards to. Its --json is doctor's envelope. When the bridge
 * cannot even be located, the one `bridge` line says why and the exit is 21 — nothing was
 * judged, which is not evidence that the bridge is down.
 */
export async function runBridgeChecks(opts: BridgeCheckOptions, io: CliIO): Promise<Outcome> {
  const prepared = prepare(opts.stateHome, io);
  if (!prepared.ok) return prepared.outcome;
  const found = await diagnoseBridge({ io, knobs: prepared.knobs, stateRoot: prepared.stateRoot, session: opts.session });
  if (found.ok) return emit(found.report, opts.json === true, io);
  const report = buildReport([check('bridge', 'warn', `could not locate this agent session's bridge: ${found.reason}`, { fix: found.fix })]);
  return emit(report, opts.json === true, io, DOCTOR_EXIT.couldNotRun);
}
