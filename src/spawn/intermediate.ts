import { writeFileAtomic } from '../util/fs-durable.js';
import { startDetached } from './detach.js';
import { parsePlan } from './plan.js';

/**
 * The throwaway middle of the double fork (POSIX): started by the reader, it starts the
 * consumer detached, relays its pid through the plan's result file, and exits at once —
 * so the consumer is reparented away and the reader is never its parent. Its argv is one
 * JSON plan; it has nothing to print.
 */
const plan = parsePlan(process.argv[2]);
if (plan.ok) {
  const outcome = await startDetached(plan.value, process.env);
  writeFileAtomic(plan.value.resultPath, JSON.stringify(outcome) + '\n');
}
