// Runs the adoption exactly as resolution does, in a process of its own, and SIGKILLs
// itself right after one durable step: a crash injected at a known point, with no knob in
// the product. argv: <entry dir> <0.9 home> <hub url> <agent id> <step>; token in DRIVER_TOKEN.
import { adoptLegacyHome } from '../../../dist/cli/resolve/adopt-legacy.js';
import { openStateDir } from '../../../dist/spool/index.js';
import { systemClock } from '../../../dist/util/clock.js';

const [stateDirPath, legacyDir, hubUrl, agentId, crashAfter] = process.argv.slice(2);
const opened = openStateDir(stateDirPath, { create: true });
if (!opened.ok) {
  process.stderr.write(`${opened.reason}\n`);
  process.exit(2);
}
const r = await adoptLegacyHome({
  legacyDir,
  stateDir: opened.value,
  io: { env: process.env, cwd: process.cwd(), clock: systemClock, pid: process.pid },
  hubUrl,
  token: process.env.DRIVER_TOKEN,
  agentId,
  pinned: null,
  afterStep: (step) => {
    if (step === crashAfter) process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write(JSON.stringify(r) + '\n');
