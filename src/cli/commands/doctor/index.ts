// `oh-hai doctor`: the health check. runBridgeChecks is also what the retired
// `oh-hai bridge status` forwards to.
export { run, runBridgeChecks, type DoctorOptions, type BridgeCheckOptions } from './run.js';
export type { Check, CheckStatus, DoctorReport, SelfTestReport, Step, Verdict } from './report.js';
