import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { collect, repoRoot, runOhHai } from '../helpers/cli.js';
import { tempEnv } from '../helpers/env.js';
import { reservePort } from '../helpers/ports.js';
import { killAndWait } from '../helpers/process.js';
import { fencedBlocks, shellCommands, type FencedBlock } from './markdown.js';

/**
 * The README can not rot: every shell block in it is executed here.
 *   ```sh first-screen   — the set-up commands, run in a fresh clone (npm test is what CI runs)
 *   ```sh runnable       — run in order, in one bash, in a throwaway home, from the checkout
 *   ```sh background     — one long-running command (the Hub), started in the background
 *   ```sh                — allowed only when every command in it is also in a runnable block
 * The Hub's documented port is mapped to a reserved one (test/helpers/ports.ts), so parallel test files never collide.
 */
const README = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const blocks = fencedBlocks(README);
const shell = blocks.filter((b) => b.lang === 'sh');
const KINDS = ['first-screen', 'runnable', 'background'] as const;
const kind = (b: FencedBlock) => KINDS.find((k) => b.tags.includes(k));
const DOC_PORT = '8417';
const HUB_READY = 'hub: listening on ';

/** One bash script from the runnable and background blocks, in README order. */
function walkthrough(port: number, logDir: string): string {
  const out = [
    'set -euo pipefail',
    '__bg=()',
    // Stop the background commands and wait for them: one still exiting writes into the home the test then removes.
    'trap \'for p in "${__bg[@]}"; do kill "$p" 2>/dev/null || true; done; wait\' EXIT',
    // A condition with a deadline (the Hub's ready line), never a fixed sleep.
    '__ready() { local end=$((SECONDS + 60)); until grep -qF -- "$2" "$1" 2>/dev/null; do',
    '  if [ "$SECONDS" -ge "$end" ]; then echo "README test: \'$2\' never appeared in $1:" >&2; cat "$1" >&2; return 1; fi; sleep 0.05; done; }',
  ];
  shell.forEach((b, i) => {
    const k = kind(b);
    if (k !== 'runnable' && k !== 'background') return;
    const code = b.code.replaceAll(DOC_PORT, String(port));
    out.push(`echo "--- README.md:${b.line}" >&2`);
    if (k === 'runnable') out.push(code);
    else {
      const cmds = shellCommands(code);
      if (cmds.length !== 1) throw new Error(`README.md:${b.line}: a background block holds exactly one command`);
      const log = path.join(logDir, `background-${i}.log`);
      out.push(`${cmds[0]} > '${log}' 2>&1 &`, '__bg+=($!)', `__ready '${log}' '${HUB_READY}'`);
    }
  });
  // Not README text: after the last block, while the Hub still runs, what each agent sent and how far it got.
  out.push(
    `oh-hai messages list --json > '${path.join(logDir, 'builder-sent.json')}'`,
    `OH_HAI_TOKEN=$REVIEWER_TOKEN oh-hai messages list --json > '${path.join(logDir, 'reviewer-sent.json')}'`,
  );
  return out.join('\n') + '\n';
}

/** Connections the bridge double-forked live outside the script's process group: stop them by their records. */
async function stopConsumers(stateRoot: string): Promise<void> {
  for (const leg of ['sessions', 'principal']) {
    const dir = path.join(stateRoot, 'oh-hai', 'bridge', leg);
    if (!existsSync(dir)) continue;
    for (const key of readdirSync(dir)) {
      try {
        const rec = JSON.parse(readFileSync(path.join(dir, key, 'consumer.json'), 'utf8')) as { pid?: unknown };
        if (typeof rec.pid !== 'number') continue;
        const cmdline = readFileSync(`/proc/${rec.pid}/cmdline`, 'utf8');
        if (cmdline.includes('__consumer')) await killAndWait(rec.pid, 'SIGTERM');
      } catch {
        // no record, or the process is gone: nothing to stop
      }
    }
  }
}

describe('README.md', () => {
  it('marks every shell block, and shows no command a test does not run', () => {
    const executed = new Set(shell.filter((b) => kind(b) !== undefined).flatMap((b) => shellCommands(b.code)));
    for (const b of shell) {
      if (kind(b) !== undefined) continue;
      for (const cmd of shellCommands(b.code)) expect(executed, `README.md:${b.line}: "${cmd}" is shown but never run`).toContain(cmd);
    }
    expect(shell.filter((b) => kind(b) === 'first-screen')).toHaveLength(1);
    expect(shell.some((b) => kind(b) === 'runnable')).toBe(true);
  });

  it('shows the exit table exactly as `oh-hai bridge --exit-codes` prints it', async () => {
    const t = tempEnv();
    try {
      const r = await runOhHai(['bridge', '--exit-codes'], { env: t.env });
      expect(r.code, r.stderr).toBe(0);
      const printed = r.stdout
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => l.split('\t'));
      const table = /<!-- exit-table:begin -->\n([\s\S]*?)<!-- exit-table:end -->/.exec(README);
      expect(table, 'README.md has no exit-table block').not.toBeNull();
      const rows = (table?.[1] ?? '')
        .trimEnd()
        .split('\n')
        .slice(2)
        .map((l) =>
          l
            .replace(/^\| | \|$/g, '')
            .split(/ (?<!\\)\| /)
            .map((c) => c.replace(/\\\|/g, '|')),
        );
      expect(rows).toEqual(printed);
    } finally {
      t.cleanup();
    }
  });

  it('links only to files that exist', () => {
    const links = [...README.matchAll(/\]\(([^)#]+)\)/g)].map((m) => m[1] ?? '').filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) expect(existsSync(path.join(repoRoot, l)), `README.md links to ${l}`).toBe(true);
  });

  it('runs every runnable block in order against a local Hub, and the bridge prints what the text says it prints', async () => {
    const t = tempEnv({ OH_HAI_WAIT_SECONDS: '30', OH_HAI_MAX_RETRIES: '2' });
    const logDir = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-readme-'));
    const script = path.join(logDir, 'walkthrough.sh');
    const port = await reservePort();
    writeFileSync(script, walkthrough(port.port, logDir));
    const child = spawn('bash', [script], { cwd: repoRoot, env: t.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const r = await collect(child, 240_000);
      const out = r.stdout;
      expect(r.code, `${r.stderr}\n${out}`).toBe(0);
      // Try it by hand: the human's directive, addressed by label, printed by the builder's bridge
      // with the id `hub directive` printed (its thread), so the two sides can be matched.
      const directive = /^queued directive (msg_\S+) to agent:agt_\S+ \(builder\)/m.exec(out)?.[1];
      expect(directive, out).toBeDefined();
      expect(out).toMatch(
        new RegExp(
          `^\\[mail 1\\] directive from human:acct_\\S+ \\(ent_\\S+\\) · thread ${directive} · no reply channel · .*"say hello to the reviewer; done when it has answered"$`,
          'm',
        ),
      );
      // Sending: the reviewer's bridge prints the notify; the builder's prints the receipt; the track says so.
      expect(out).toMatch(/^\[mail 1\] notify from agent:agt_\S+#sess_\S+ \(msg_\S+\) · notify: no reply expected · .*"hello from the builder"$/m);
      // The builder sent to the label, so its directory cache names the reviewer beside the id.
      expect(out).toMatch(/^\[mail 2\] receipt: your message msg_\S+ to agent:agt_\S+ \(reviewer\) acknowledged$/m);
      expect(out).toMatch(/queued \S+ → delivered \S+ → acknowledged/);
      // The sender policy: the restarted connection admits the reviewer's ask; the answer reaches the Hub.
      expect(out).toMatch(/^\[mail 3\] ask from agent:agt_\S+#sess_\S+ \(reviewer\) \(msg_\S+\) · reply: oh-hai reply msg_\S+ · .*"may I merge\?"$/m);
      expect(out).toContain('yes, merge');
      // The reviewer reads its ask's receipt, then the answer: nothing it was sent is left to bounce.
      expect(out).toMatch(/^\[mail 2\] receipt: your message msg_\S+ to agent:agt_\S+ \(builder\) acknowledged$/m);
      expect(out).toMatch(/^\[mail 3\] response from agent:agt_\S+#sess_\S+ \(builder\) to your ask msg_\S+ \(msg_\S+\) · .*"yes, merge"$/m);
      // The walkthrough ends clean: no bounce anywhere, no ⚠️ (e.g. "stood down with unread mail").
      expect(`${out}\n${r.stderr}`).not.toMatch(/bounced|⚠️/);
      const tracks = (who: string) =>
        (JSON.parse(readFileSync(path.join(logDir, `${who}-sent.json`), 'utf8')) as { state: string; intent: string }[])
          .map((m) => `${m.intent} ${m.state}`)
          .sort();
      expect(tracks('builder')).toEqual(['notify acknowledged', 'response acknowledged']);
      expect(tracks('reviewer')).toEqual(['ask acknowledged']);
      // Where state lives: one entry per agent session, keyed by a hash.
      expect(out.match(/^[0-9a-f]{32}$/gm)).toHaveLength(2);
      // Standing down, both sessions.
      expect(out.match(/^closed session sess_\S+/gm)).toHaveLength(2);
    } finally {
      if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      await stopConsumers(String(t.env.XDG_STATE_HOME));
      port.release();
      rmSync(logDir, { recursive: true, force: true });
      t.cleanup();
    }
  }, 300_000);

  describe('the first screen, on a clean clone', () => {
    const first = shell.find((b) => kind(b) === 'first-screen');
    const commands = first ? shellCommands(first.code) : [];

    it('is install, demo and test, and `npm test` is what CI runs', () => {
      expect(commands).toEqual(['npm install', 'npm run demo', 'npm test']);
      // Running the suite from inside itself would recurse: CI is where `npm test` runs.
      expect(readFileSync(path.join(repoRoot, '.ci', 'run'), 'utf8')).toMatch(/^\s*npm test( \|\| failed=1)?$/m);
    });

    const git = spawnSync('git', ['-C', repoRoot, 'rev-parse', '--is-inside-work-tree'], { encoding: 'utf8' });
    const why = git.status !== 0 ? 'this checkout is not a git work tree, so there is nothing to clone' : null;
    if (why) console.log(`skipping the clean-clone run of the README's first screen: ${why}`);

    it.skipIf(why !== null)(
      'gets a message printed by oh-hai bridge from `npm install` then `npm run demo`',
      async () => {
        const t = tempEnv({
          // npm as this machine has it set up (its user config, e.g. nodedir for the native
          // build, and its cache): the throwaway HOME must not hide them.
          npm_config_userconfig: process.env.npm_config_userconfig ?? path.join(os.homedir(), '.npmrc'),
          npm_config_cache: process.env.npm_config_cache ?? path.join(os.homedir(), '.npm'),
          npm_config_prefer_offline: 'true',
          npm_config_fund: 'false',
          npm_config_audit: 'false',
          // The C compiler's cache: .ci/run puts ccache first on PATH, so this clone's build of
          // better-sqlite3 (the same sources and flags as the checkout's) is a hit, not minutes of cc.
          ...(process.env.CCACHE_DIR ? { CCACHE_DIR: process.env.CCACHE_DIR } : {}),
        });
        const clone = path.join(t.root, 'clone');
        try {
          const c = spawnSync('git', ['clone', '--quiet', '--no-hardlinks', repoRoot, clone], { encoding: 'utf8' });
          expect(c.status, c.stderr).toBe(0);
          const run = commands.filter((cmd) => cmd !== 'npm test').join('\n');
          const child = spawn('bash', ['-euo', 'pipefail', '-c', run], { cwd: clone, env: t.env, stdio: ['ignore', 'pipe', 'pipe'] });
          const r = await collect(child, 900_000);
          expect(r.code, `${r.stderr}\n${r.stdout}`).toBe(0);
          expect(r.stdout).toMatch(/^\[mail 1\] notify from agent:agt_\S+ \(msg_\S+\) · notify: no reply expected · .*"Hello from alice/m);
          expect(r.stdout).toContain('queued → delivered → acknowledged');
        } finally {
          t.cleanup();
        }
      },
      960_000,
    );
  });
});
