import { beforeAll, describe, expect, it } from 'vitest';
import { runOhHai, type RunResult } from '../../helpers/cli.js';
import { hasScript, plainText, runOnPty } from '../../helpers/pty.js';
import { as, BRIDGE, useParties } from '../messaging/world.js';

/**
 * The listing commands' tables (docs/terminal.md): aligned on a terminal, the widest cells
 * wrapped inside their column on a narrow one; in a pipe `fleet ls` and `hub agent ls` are
 * tab-separated, and `messages list`, `fleet ls --sessions` and `doctor` keep the lines they
 * always printed (piped.golden.txt holds `messages list`'s bytes).
 */
const pty = hasScript();
if (!pty) console.warn('tables.test.ts: `script` (util-linux) is not installed, so the pseudo-terminal tests cannot run');

const SESSION = 'bob-tables';
/** doctor's checks without --self-test. */
const DOCTOR_NAMES = ['node', 'config', 'state root', 'mcp', 'policy', 'hub', 'capability', 'clock', 'credential'];
/** Narrower than each table's natural width, wide enough for its longest ids and addresses (a word is never broken). */
const NARROW_LIST = 140;
const NARROW_FLEET = 180;

describe('tables', () => {
  const world = useParties(['alice', 'bob']);
  /** What each command needs to list: a message alice sent, read by bob, and bob's live session. */
  beforeAll(async () => {
    expect((await as(world.alice, null, ['send', '--to', world.bob.address, 'a message for the tables test'])).code).toBe(0);
    const read = await as(world.bob, SESSION, [...BRIDGE, '--wait', '20']);
    expect(read.stdout).toContain('a message for the tables test');
  });

  const onPty = async (env: NodeJS.ProcessEnv, args: string[], cols: number): Promise<string[]> => {
    const r = await runOnPty(args, { env, cols });
    expect(r.code, r.tty).toBe(0);
    return plainText(r.tty).trimEnd().split('\n');
  };
  const hubAdmin = (args: string[]) => ['hub', ...args, '--data', world.hub.dataDir];

  /** In an aligned row each cell starts where its header does; no tab anywhere. */
  const expectAligned = (lines: string[], header: string[], row: string, cells: string[]) => {
    expect(lines.join('\n')).not.toContain('\t');
    const head = lines.find((l) => l.startsWith(header[0]!));
    expect(head, lines.join('\n')).toBeDefined();
    const line = lines.find((l) => l.startsWith(row));
    expect(line, lines.join('\n')).toBeDefined();
    header.forEach((h, i) => {
      const at = head!.indexOf(h);
      expect(at, `${h} in ${head}`).toBeGreaterThanOrEqual(0);
      expect(line!.slice(at).startsWith(cells[i]!), `${cells[i]} under ${h}:\n${lines.join('\n')}`).toBe(true);
    });
  };

  describe.runIf(pty)('on a terminal', () => {
    it('messages list is an aligned table; on a narrow terminal no line is wider than it', async () => {
      const lines = await onPty(world.alice.env, ['messages', 'list'], 400);
      expectAligned(lines, ['MESSAGE', 'INTENT', 'TO', 'STATE', 'TEXT'], 'msg_', ['msg_', 'notify', world.bob.address, 'acknowledged', '"a message']);
      const narrow = await onPty(world.alice.env, ['messages', 'list'], NARROW_LIST);
      expect(
        narrow.every((l) => l.length <= NARROW_LIST),
        narrow.join('\n'),
      ).toBe(true);
      expect(narrow.join(' ')).toContain('acknowledged');
    });

    it('fleet ls is an aligned table', async () => {
      const lines = await onPty(world.alice.env, ['fleet', 'ls'], 400);
      expectAligned(lines, ['LABEL', 'ADDRESS', 'REACHABILITY'], 'bob ', ['bob', world.bob.address, 'online']);
    });

    it('fleet ls --sessions is an aligned table; on a narrow terminal no line is wider than it', async () => {
      const lines = await onPty(world.bob.env, ['fleet', 'ls', '--sessions'], 400);
      expectAligned(lines, ['ADDRESS', 'AGENT', 'REACHABILITY', 'STATE'], `${world.bob.address}#`, [
        `${world.bob.address}#`,
        'bob, name bob-tables',
        'online',
        'active',
      ]);
      const narrow = await onPty(world.bob.env, ['fleet', 'ls', '--sessions'], NARROW_FLEET);
      expect(
        narrow.every((l) => l.length <= NARROW_FLEET),
        narrow.join('\n'),
      ).toBe(true);
    });

    it('hub agent ls is an aligned table', async () => {
      const lines = await onPty(world.alice.env, hubAdmin(['agent', 'ls']), 400);
      expectAligned(lines, ['id', 'label', 'state', 'source'], world.bob.id, [world.bob.id, 'bob', 'active', 'account']);
    });

    it("doctor's checks are one aligned table: every detail starts in one column and wraps inside it", async () => {
      // A warning (no sender policy is configured here) is no fault of the layout: the exit code is not the point.
      const r = await runOnPty(['doctor'], { env: world.bob.env, cols: 80 });
      const lines = plainText(r.tty).trimEnd().split('\n');
      const checks = lines.filter((l) => /^(pass|warn|fail|skip) /.test(l));
      expect(checks.length, lines.join('\n')).toBe(DOCTOR_NAMES.length);
      const column = (l: string) => detailColumn(l);
      expect(new Set(checks.map(column)).size, lines.join('\n')).toBe(1);
      // Continuation lines (a wrapped detail, a fix) start in the detail column; nothing runs past the width.
      const detail = column(checks[0]!);
      const continued = lines.filter((l) => /^ /.test(l));
      expect(continued.length, lines.join('\n')).toBeGreaterThan(0);
      for (const l of continued) expect(l.length - l.trimStart().length, l).toBe(detail);
      expect(
        lines.every((l) => l.length <= 80),
        lines.join('\n'),
      ).toBe(true);
      expect(lines.at(-1)).toMatch(/^doctor: /);
    });
  });

  describe('through a pipe', () => {
    const rows = (r: RunResult) => {
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.trimEnd().split('\n');
    };

    it('fleet ls and hub agent ls are tab-separated, header first', async () => {
      const fleet = rows(await as(world.alice, null, ['fleet', 'ls']));
      expect(fleet[0]).toBe('LABEL\tADDRESS\tREACHABILITY\tLIVE SESSIONS');
      expect(fleet).toContainEqual(expect.stringMatching(new RegExp(`^bob\\t${world.bob.address}\\tonline\\t1 \\(sess_\\w+\\)$`)));
      const agents = rows(await runOhHai(hubAdmin(['agent', 'ls']), { env: world.alice.env }));
      expect(agents[0]).toBe('id\tlabel\tstate\tsource');
      expect(agents).toContain(`${world.bob.id}\tbob\tactive\taccount`);
    });

    it('messages list, fleet ls --sessions and doctor print the lines they always did: no table, no tab, no padding', async () => {
      const list = rows(await as(world.alice, null, ['messages', 'list']));
      expect(list).toEqual([
        expect.stringMatching(/^msg_\S+ · notify → agent:\S+ \(bob\) · acknowledged · queued \S+ → .* · "a message for the tables test"$/),
      ]);
      const sessions = rows(await as(world.bob, null, ['fleet', 'ls', '--sessions']));
      expect(sessions).toEqual([
        expect.stringMatching(
          /^agent:\S+#sess_\S+ \(bob, name bob-tables\) · online · active, lease expires \S+ \(Hub's clock, last renewed \S+\) · held by pid \d+ on .* · home found · /,
        ),
      ]);
      const doctor = (await as(world.bob, null, ['doctor'])).stdout.trimEnd().split('\n');
      expect(doctor.join('\n')).not.toContain('\t');
      // The layout doctor always had: the status padded to 5, a space, the name padded to the longest, a space, the detail.
      const checks = doctor.filter((l) => /^(pass|warn|fail|skip) /.test(l));
      expect(checks.length, doctor.join('\n')).toBe(DOCTOR_NAMES.length);
      const width = Math.max(...DOCTOR_NAMES.map((n) => n.length));
      for (const l of checks) expect(detailColumn(l), doctor.join('\n')).toBe(6 + width + 1);
    });
  });
});

/** Where the detail of one of doctor's check lines starts: after the status, the name and their padding. */
function detailColumn(line: string): number {
  const name = DOCTOR_NAMES.find((n) => line.slice(6).startsWith(`${n} `));
  if (name === undefined) throw new Error(`no doctor check named at column 6 of: ${line}`);
  const rest = line.slice(6 + name.length);
  return 6 + name.length + (rest.length - rest.trimStart().length);
}
