import { describe, expect, it } from 'vitest';
import { runOhHai } from '../../helpers/cli.js';
import { tempEnv } from '../../helpers/env.js';

/** The help (docs/terminal.md): grouped, bridge first, terse, examples; retired surface hidden but still accepted. */
describe('help', () => {
  it('groups the commands by what a user comes to do, bridge first, one terse line each', async () => {
    const t = tempEnv();
    const r = await runOhHai(['--help'], { env: t.env });
    t.cleanup();
    expect(r.code).toBe(0);
    const headings = r.stdout.split('\n').filter((l) => /^[A-Z][\w ]+:$/.test(l));
    expect(headings).toEqual(['Options:', 'Reading mail:', 'Sending:', 'Sessions:', 'Setup:', 'Operating a Hub:']);
    const firstCommand = r.stdout.split('Reading mail:\n')[1]!.split('\n')[0]!;
    expect(firstCommand).toMatch(/^ {2}bridge /);
    expect(r.stdout).not.toMatch(/RE-RUN IT AFTER EVERY EXIT/);
  });

  it("a command's help ends with examples, and the retired bridge subcommands are not listed but still forward", async () => {
    const t = tempEnv();
    const help = await runOhHai(['bridge', '--help'], { env: t.env });
    const retired = await runOhHai(['bridge', 'status'], { env: t.env });
    t.cleanup();
    expect(help.stdout).toMatch(/\nExamples:\n {2}\$ oh-hai bridge\n/);
    expect(help.stdout).not.toMatch(/^ {2}(consume|status|stop)\b/m);
    expect(help.stdout).not.toMatch(/^Commands:/m);
    expect(retired.stderr).toMatch(/retired/);
  });
});
