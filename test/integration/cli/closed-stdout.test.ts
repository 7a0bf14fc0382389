import { describe, expect, it } from 'vitest';
import { collect, startOhHai, type RunResult } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';
import { useParties } from '../messaging/world.js';

/**
 * `oh-hai … | head -1`: the reader of stdout exits before the command has written. Node ignores
 * SIGPIPE, so every later write fails with EPIPE; unheard, that was Node's stack trace and exit 1
 * ("Unhandled 'error' event") from every printing command but the bridge. Each must end as a shell
 * reports any writer a closed pipe ended: 141, nothing on stderr, unless the command itself failed.
 * The read end is closed before the child has even started Node, so every write meets EPIPE.
 */
function runClosed(args: string[], env: NodeJS.ProcessEnv, closeStderr = false): Promise<RunResult> {
  const child = startOhHai(args, { env });
  child.stdout?.destroy();
  if (closeStderr) child.stderr?.destroy();
  child.stdin?.end();
  return collect(child);
}

const quietPipeExit = (r: RunResult, what: string) => {
  expect({ what, code: r.code, stderr: r.stderr }).toEqual({ what, code: 141, stderr: '' });
};

describe('a printing command whose stdout is closed', () => {
  it('without a Hub: the help, the exit table, the snippet', async () => {
    const t = tempEnv();
    try {
      for (const args of [[], ['--help'], ['send', '--help'], ['bridge', '--exit-codes'], ['teach']]) {
        quietPipeExit(await runClosed(args, t.env), `oh-hai ${args.join(' ')}`);
      }
    } finally {
      t.cleanup();
    }
  }, 60_000);

  const world = useParties(['builder', 'reviewer']);

  it('against a Hub: a send, the fleet, the messages; a refusal keeps its own code and line', async () => {
    const { builder, reviewer } = world;
    for (const args of [
      ['send', '--to', reviewer.address, 'hello'],
      ['fleet', 'ls'],
      ['messages', 'list'],
      ['messages', 'list', '--json'],
    ]) {
      quietPipeExit(await runClosed(args, builder.env), `oh-hai ${args.join(' ')}`);
    }
    const refused = await runClosed(['send', '--to', 'agent:agt_nobody', 'hello'], builder.env);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/^oh-hai send: FATAL \(exit 4, recipient_not_found\)/);
    // `2>&1 | head -1`: stderr is the same closed pipe; the refusal's code still stands.
    expect((await runClosed(['send', '--to', 'agent:agt_nobody', 'hello'], builder.env, true)).code).toBe(4);
  }, 60_000);
});
