import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { BRIDGE_OPTIONS, parseBridgeArgv } from '../../../src/cli/bridge-options.js';
import { register } from '../../../src/cli/commands/bridge/register.js';
import type { CliIO } from '../../../src/cli/io.js';

/** What commander makes of argv for the bridge: its options, or the error it stops with. */
function commanderParse(argv: string[]): { opts: Record<string, unknown> } | { error: string } {
  const program = new Command('oh-hai').exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  register(program, { io: {} as CliIO, finish: () => undefined, forward: async () => 0 });
  let opts: Record<string, unknown> | null = null;
  const bridge = program.commands.find((c) => c.name() === 'bridge')!;
  bridge.exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  bridge.action((o: Record<string, unknown>) => void (opts = o));
  try {
    program.parse(argv, { from: 'user' });
  } catch (e) {
    return { error: (e as Error).message };
  }
  return opts === null ? { error: 'a subcommand ran' } : { opts };
}

const VALUES = ['5', '0', 'sess_1', 'x y', '', 'a=b', 'agent:agt_1#sess_2', '-1', '--raw', 'bridge'];

/** Every option alone and in pairs, each spelling, and the shapes that must go to commander. */
function corpus(): string[][] {
  const single: string[][] = [];
  for (const o of BRIDGE_OPTIONS) {
    const name = o.flags.split(' ')[0]!;
    if (o.takes === 'flag') single.push([name], [`${name}=x`]);
    else for (const v of VALUES) single.push([name, v], [`${name}=${v}`]);
    if (o.takes !== 'flag') single.push([name]);
  }
  const argvs = [['bridge'], ...single.map((s) => ['bridge', ...s])];
  for (const a of single) for (const b of single.slice(0, 40)) argvs.push(['bridge', ...a, ...b]);
  argvs.push(
    ['bridge', '--allow-from', 'a', '--allow-from', 'b', '--wait', '1', '--wait', '2'],
    ['bridge', '--help'],
    ['bridge', '-h'],
    ['bridge', '--once'],
    ['bridge', '--until-event', 'x'],
    ['bridge', '--stream'],
    ['bridge', '--attach-only'],
    ['bridge', '--nope'],
    ['bridge', 'extra'],
    ['bridge', '--', '--raw'],
    ['bridge', 'status'],
    ['bridge', 'stop', '--purge'],
    ['bridge', 'consume', '--x'],
    ['--raw', 'bridge'],
    ['bridge', '--RAW'],
  );
  return argvs;
}

describe('the bridge without commander (parseBridgeArgv)', () => {
  it('gives exactly what commander gives for every argv it accepts, and leaves the rest to commander', () => {
    let accepted = 0;
    for (const argv of corpus()) {
      const fast = parseBridgeArgv(argv);
      if (fast === null) continue;
      accepted += 1;
      expect(commanderParse(argv), argv.join(' ')).toEqual({ opts: fast });
    }
    // The plain spellings are all accepted: the fast path is not vacuous.
    expect(accepted).toBeGreaterThan(500);
    expect(parseBridgeArgv(['bridge'])).toEqual({});
    expect(parseBridgeArgv(['bridge', '--wait', '0'])).toEqual({ wait: '0' });
    expect(parseBridgeArgv(['bridge', '--raw', '--allow-from=a', '--allow-from', 'b'])).toEqual({ raw: true, allowFrom: ['a', 'b'] });
  });

  it('sends help, subcommands, retired and unknown flags and odd values to commander', () => {
    for (const argv of [
      ['bridge', '--help'],
      ['bridge', '-h'],
      ['bridge', '--once'],
      ['bridge', '--nope'],
      ['bridge', 'status'],
      ['bridge', 'extra'],
      ['bridge', '--wait'],
      ['bridge', '--wait', '--raw'],
      ['bridge', '--raw=1'],
      ['--raw', 'bridge'],
      ['session', 'close'],
    ]) {
      expect(parseBridgeArgv(argv), argv.join(' ')).toBeNull();
    }
  });

  it('knows every option the bridge declares to commander, except the retired ones', () => {
    const program = new Command('oh-hai');
    register(program, { io: {} as CliIO, finish: () => undefined, forward: async () => 0 });
    const declared = program.commands.find((c) => c.name() === 'bridge')!.options.map((o) => o.long);
    expect(declared.filter((d) => !['--once', '--until-event', '--stream', '--attach-only'].includes(d!))).toEqual(
      BRIDGE_OPTIONS.map((o) => o.flags.split(' ')[0]),
    );
  });
});
