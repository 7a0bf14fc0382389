// The samples of a V8 CPU profile (`node --cpu-prof`) taken inside a bench's time windows, idle left out:
// what bench/cpu-profile-breakdown.mjs and bench/connect-profile.mjs attribute to a send's or a connect's
// steps. Never run by CI.

/** A function's name as the bundle keeps it (esbuild may add a digit). */
export const nameOf = (node) => node.callFrame.functionName.replace(/\d+$/, '');

/**
 * Every non-idle sample whose time falls in one of `windows` ([start, end] on the profile's clock), as its
 * leaf node and the time it stands for; with the tree's nodes by id and each node's parent, to walk a
 * sample's stack up from its leaf.
 */
export function windowedSamples(prof, windows) {
  const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inWindow = (t) => windows.some(([a, b]) => t >= a && t <= b);
  const samples = [];
  let total = 0;
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i];
    const dt = prof.timeDeltas[i + 1] ?? 0;
    const leaf = nodes.get(prof.samples[i]);
    if (!inWindow(t) || nameOf(leaf) === '(idle)') continue;
    total += dt;
    samples.push({ leaf, dt });
  }
  return { nodes, parent, samples, total };
}
