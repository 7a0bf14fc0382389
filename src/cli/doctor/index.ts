// `oh-hai doctor`'s library: the checks, the report and the runs. runBridgeChecks is also what the retired
// `oh-hai bridge status` forwards to.
export { run, runBridgeChecks, type DoctorOptions, type BridgeCheckOptions } from './run.js';
export type { Check, CheckStatus, DoctorReport, SelfTestReport, Step, Verdict } from './report.js';
