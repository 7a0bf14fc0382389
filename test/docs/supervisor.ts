import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A tiny process supervisor for the unit tests: it runs one command line, and when the
 * process exits asks a restart policy whether to start it again. It stands in for systemd
 * (Restart=on-failure + RestartPreventExitStatus=) and for launchd (KeepAlive /
 * SuccessfulExit=false). RestartSec= is replaced by a short fixed delay so the test runs in
 * seconds; it is a pacing of restarts, not a wait for anything.
 */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** What the supervisor decided on this exit. */
  restarted: boolean;
}

export type RestartPolicy = (exit: Pick<Exit, 'code' | 'signal'>) => boolean;

export interface Unit {
  execStart: string;
  restart: string;
  preventExitStatus: number[];
}

/** The [Service] settings the supervisor honours, read from a systemd unit file. */
export function parseUnit(text: string): Unit {
  const get = (key: string): string => {
    const values = [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1] ?? '');
    if (values.length !== 1) throw new Error(`the unit has ${values.length} ${key}= lines; the test supervisor expects exactly one`);
    return values[0] ?? '';
  };
  return {
    execStart: get('ExecStart'),
    restart: get('Restart'),
    preventExitStatus: get('RestartPreventExitStatus').trim().split(/\s+/).map(Number),
  };
}

/** systemd's specifiers as a template instance sees them (only those our units use). */
export function expandSpecifiers(line: string, values: { i: string; h: string }): string {
  return line.replace(/%([%ih])/g, (_m, s: string) => (s === '%' ? '%' : s === 'i' ? values.i : values.h));
}

/** systemd's clean signals: a death by one of these is not a failure to Restart=on-failure. */
const CLEAN_SIGNALS: readonly string[] = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGPIPE'];

/** Restart=on-failure with RestartPreventExitStatus=, as systemd.service(5) defines them. */
export function systemdPolicy(unit: Unit): RestartPolicy {
  if (unit.restart !== 'on-failure') throw new Error(`the test supervisor implements Restart=on-failure, the unit says ${unit.restart}`);
  return ({ code, signal }) => {
    if (signal !== null) return !CLEAN_SIGNALS.includes(signal);
    return code !== 0 && !unit.preventExitStatus.includes(code ?? -1);
  };
}

/** launchd's KeepAlive = { SuccessfulExit = false }: restart on anything but a 0 exit. */
export const launchdPolicy: RestartPolicy = ({ code, signal }) => signal !== null || code !== 0;

export class Supervisor {
  readonly exits: Exit[] = [];
  private child: ChildProcess | null = null;
  private stopping = false;
  private done!: () => void;
  /** Resolves once the supervisor has decided not to start the process again. */
  readonly settled: Promise<void> = new Promise((resolve) => (this.done = resolve));

  constructor(
    private readonly argv: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly policy: RestartPolicy,
    private readonly restartDelayMs = 200,
  ) {
    this.start();
  }

  /** The pid of the process running now, if any. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null;
  }

  private start(): void {
    const [cmd, ...args] = this.argv;
    if (cmd === undefined) throw new Error('empty command line');
    const child = spawn(cmd, args, { env: this.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    this.child = child;
    child.on('close', (code, signal) => {
      this.child = null;
      const restarted = !this.stopping && this.policy({ code, signal });
      this.exits.push({ code, signal, stderr, restarted });
      if (restarted) setTimeout(() => (this.stopping ? this.done() : this.start()), this.restartDelayMs);
      else this.done();
    });
  }

  /** What `systemctl stop` does: SIGTERM, and no restart whatever the exit. */
  async stop(): Promise<Exit | undefined> {
    this.stopping = true;
    this.child?.kill('SIGTERM');
    await this.settled;
    return this.exits.at(-1);
  }

  /** Test cleanup: whatever state it is in, nothing keeps running. */
  kill(): void {
    this.stopping = true;
    this.child?.kill('SIGKILL');
  }
}
