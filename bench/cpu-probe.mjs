// Whether a vCPU is slow right now: the same fixed work (an awk loop of 10⁶ iterations) pinned to each CPU in turn, its
// CPU time (user + sys, from bash's `time`). On this Firecracker guest steal is never reported, so the host taking or
// sharing a vCPU's core shows up only as more CPU time for the same work, in every process on that vCPU: session 20
// (mode12) saw the loop cost 28–31 ms on one vCPU and 45–52 ms on the other for a minute or so at a time, with the guest
// idle, and the slowest ×2 runs of bench/hub-cluster.mjs had it. CPU time, not wall time: another process on the same
// CPU delays the loop but does not add to its CPU time. bench/hub-cluster.mjs runs it before and after each measured
// phase. Never run by CI.
// Alone: node bench/cpu-probe.mjs [--every <s, default 2>] [--rounds <per CPU each time, default 1>]
//   a line per sample (UTC time, each CPU's ms and a `slow` mark, then each CPU's busy share since the last line and the
//   load average), until interrupted: a CPU slow while the other sat idle is not this guest's own load on a sibling thread.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const LOOP = 'BEGIN{for(i=0;i<1000000;i++)s+=i*i}';
/** A CPU whose loop took this many times the fastest seen is slow: mode12's two levels were ~1.6× apart, noise ~10 %. */
export const SLOW_RATIO = 1.3;

/** One run of the loop pinned to `cpu`: its CPU time in ms (bash's `time` gives ms). */
const once = (cpu) =>
  new Promise((resolve, reject) =>
    execFile('bash', ['-c', `TIMEFORMAT='%3U %3S'; time taskset -c ${cpu} awk '${LOOP}'`], (error, _stdout, stderr) => {
      if (error) return reject(error);
      const [user, sys] = stderr.trim().split('\n').pop().split(' ').map(Number);
      resolve((user + sys) * 1000);
    }),
  );

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Each CPU's loop time, the median of `rounds` runs (the CPUs taken in turn, one at a time, so the probe itself holds
 * one CPU at most): an array indexed by CPU, in ms.
 */
export async function probeCpus(rounds = 3) {
  const n = os.cpus().length;
  const runs = Array.from({ length: n }, () => []);
  for (let r = 0; r < rounds; r++) for (let cpu = 0; cpu < n; cpu++) runs[cpu].push(await once(cpu));
  return runs.map(median);
}

/** `ms` (per CPU) against `fastest` (the lowest CPU time the process has seen): e.g. "cpu0 25 cpu1 41 (1.6× SLOW)". */
export const probeText = (ms, fastest) =>
  ms.map((v, cpu) => `cpu${cpu} ${v.toFixed(0)}${v >= fastest * SLOW_RATIO ? ` (${(v / fastest).toFixed(1)}× SLOW)` : ''}`).join(' ');

/** Whether any CPU of `ms` was slow against `fastest`. */
export const anySlow = (ms, fastest) => ms.some((v) => v >= fastest * SLOW_RATIO);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : dflt;
  };
  const every = arg('every', 2);
  const rounds = arg('rounds', 1);
  /** Each CPU's busy and total jiffies so far (/proc/stat's cpu<N> lines: all but idle and iowait are busy). */
  const jiffies = () =>
    readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .filter((l) => /^cpu\d/.test(l))
      .map((l) => {
        const f = l.split(/\s+/).slice(1).map(Number);
        const total = f.reduce((a, b) => a + b, 0);
        return { busy: total - f[3] - f[4], total };
      });
  let fastest = Infinity;
  let last = jiffies();
  for (;;) {
    const ms = await probeCpus(rounds);
    fastest = Math.min(fastest, ...ms);
    const now = jiffies();
    const busy = now.map((j, cpu) => `cpu${cpu} ${((100 * (j.busy - last[cpu].busy)) / Math.max(1, j.total - last[cpu].total)).toFixed(0)} %`);
    last = now;
    console.log(
      `${new Date().toISOString().slice(11, 19)} ${probeText(ms, fastest)} | busy ${busy.join(' ')} | load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
    );
    await new Promise((r) => setTimeout(r, every * 1000));
  }
}
