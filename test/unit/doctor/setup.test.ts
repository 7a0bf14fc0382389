import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configCheck, policyCheck } from '../../../src/cli/doctor/checks/config.js';
import { stateRootCheck } from '../../../src/cli/doctor/checks/state-root.js';
import { buildReport, check, renderJson, renderText, type Step } from '../../../src/cli/doctor/report.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-doctor-unit-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const uid = typeof process.getuid === 'function' ? process.getuid() : null;

function entry(mode = 0o700, fileMode = 0o600): string {
  const dir = path.join(root, 'state', 'oh-hai', 'bridge', 'sessions', '0'.repeat(32));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const d of ['oh-hai', 'oh-hai/bridge', 'oh-hai/bridge/sessions']) chmodSync(path.join(root, 'state', d), 0o700);
  chmodSync(dir, mode);
  writeFileSync(path.join(dir, 'consumer.json'), '{}', { mode: fileMode });
  chmodSync(path.join(dir, 'consumer.json'), fileMode);
  return dir;
}

describe('state root', () => {
  it('passes a root that does not exist yet, and leaves nothing behind from its write probe', () => {
    const c = stateRootCheck(path.join(root, 'state'), uid);
    expect(c).toMatchObject({ name: 'state root', status: 'pass', detail: /does not exist yet/ });
    expect(readdirSync(root)).toEqual([]);
  });

  it('passes private modes', () => {
    entry();
    expect(stateRootCheck(path.join(root, 'state'), uid)).toMatchObject({ status: 'pass', measured: { problems: 0, files: 1 } });
    expect(readdirSync(path.join(root, 'state', 'oh-hai'))).toEqual(['bridge']);
  });

  it('fails anything other users can reach, warns on group access, and names the chmod', () => {
    const dir = entry(0o700, 0o644);
    const world = stateRootCheck(path.join(root, 'state'), uid);
    expect(world).toMatchObject({ status: 'fail', fix: /chmod -R go-rwx/ });
    expect(world.detail).toContain(`${path.join(dir, 'consumer.json')} 0644`);
    chmodSync(path.join(dir, 'consumer.json'), 0o640);
    expect(stateRootCheck(path.join(root, 'state'), uid)).toMatchObject({ status: 'warn', detail: /group members/ });
    chmodSync(dir, 0o755);
    expect(stateRootCheck(path.join(root, 'state'), uid).status).toBe('fail');
  });

  it('fails an entry another user owns', () => {
    entry();
    const other = (uid ?? 0) + 1;
    expect(stateRootCheck(path.join(root, 'state'), other)).toMatchObject({ status: 'fail', detail: /owned by another user/ });
  });

  it('fails a root it cannot write (a file where the directory should be)', () => {
    writeFileSync(path.join(root, 'state'), 'not a directory');
    expect(stateRootCheck(path.join(root, 'state'), uid)).toMatchObject({ status: 'fail', detail: /cannot create files/ });
  });
});

describe('config and policy', () => {
  const env = () => ({ HOME: path.join(root, 'home'), XDG_CONFIG_HOME: path.join(root, 'config') });
  const userFile = () => path.join(root, 'config', 'oh-hai', 'config.toml');
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  };

  it('passes with no files at all, saying where it looked', () => {
    const c = configCheck({ env: env(), cwd: root }, {});
    expect(c.check).toMatchObject({ status: 'pass', detail: /not present — optional.*no project/ });
    expect(c.settings?.hubUrl).toBeNull();
  });

  it('fails an invalid user file, naming the file and line', () => {
    write(userFile(), '[hub\nurl = 1\n');
    const c = configCheck({ env: env(), cwd: root }, {});
    expect(c.settings).toBeNull();
    expect(c.check).toMatchObject({ status: 'fail', fix: /correct what the message names/ });
    expect(c.check.detail).toContain(userFile());
  });

  it('fails a project file that sets [bridge]', () => {
    const project = path.join(root, 'repo');
    write(path.join(project, '.oh-hai', 'config.toml'), '[bridge]\nallow_from = ["any-in-account"]\n');
    const c = configCheck({ env: env(), cwd: project }, {});
    expect(c.check).toMatchObject({ status: 'fail', detail: /may not set \[bridge\]/ });
  });

  it('warns on unknown keys, and reports where the Hub URL came from', () => {
    write(userFile(), '[hub]\nurl = "https://hub.example.com"\ncolour = "red"\n');
    const c = configCheck({ env: env(), cwd: root }, {});
    expect(c.check).toMatchObject({
      status: 'warn',
      detail: /https:\/\/hub\.example\.com from the user config.*unknown key/,
      measured: { hub_url_source: 'user' },
    });
  });

  it('policy: none declared warns with what it means and the fix; a declared one passes', () => {
    const none = configCheck({ env: env(), cwd: root }, {}).settings!;
    const w = policyCheck(none, env());
    expect(w).toMatchObject({ name: 'policy', status: 'warn', detail: /refuses every addressed ask\/task/ });
    expect(w.fix).toContain(userFile());
    write(userFile(), '[bridge]\nallow_from = ["agent:agt_peer"]\n');
    const declared = configCheck({ env: env(), cwd: root }, {}).settings!;
    expect(policyCheck(declared, env())).toMatchObject({ status: 'pass', detail: /agent:agt_peer/, measured: { allow_from: ['agent:agt_peer'] } });
  });
});

describe('report', () => {
  const steps: Step[] = [
    { name: 'register', status: 'pass', ms: 3.2, detail: 'registered sess_x' },
    { name: 'send', status: 'fail', ms: 5, detail: 'the Hub answered 503', fix: 'again' },
    { name: 'drain', status: 'skip', ms: null, detail: 'not run: an earlier step failed' },
  ];

  it('the verdict is the worst status; skips count for nothing', () => {
    expect(buildReport([check('a', 'pass', 'x'), check('b', 'skip', 'y')]).status).toBe('pass');
    expect(buildReport([check('a', 'pass', 'x'), check('b', 'warn', 'y', { fix: 'f' })]).status).toBe('warn');
    const r = buildReport([check('a', 'warn', 'x', { fix: 'f' }), check('bridge reader', 'fail', 'y', { fix: 'g' })], {
      client_key: 'k',
      session: 'sess_x',
      steps,
    });
    expect(r.status).toBe('fail');
    expect(r.self_test).toMatchObject({ status: 'fail', failed: ['send', 'bridge reader'] });
  });

  it('a fix is carried only by checks that did not pass', () => {
    expect(check('a', 'pass', 'x', { fix: 'f' }).fix).toBeUndefined();
    expect(check('a', 'warn', 'x', { fix: 'f' }).fix).toBe('f');
  });

  it('text: one line per check and step, a fix line under each failure, and the verdict naming what failed', () => {
    const text = renderText(
      buildReport([check('node', 'pass', 'ok'), check('bridge unread', 'fail', 'old mail', { fix: 'run oh-hai bridge' })], {
        client_key: 'k',
        session: 'sess_x',
        steps,
      }),
    );
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^pass  node +ok$/);
    expect(text).toMatch(/^fail  send +5 ms — the Hub answered 503\n +fix: again$/m);
    expect(text).toMatch(/^skip  drain +not run/m);
    expect(lines.at(-1)).toBe('doctor: FAIL — failing: bridge unread, self-test send');
  });

  it('text on a terminal: one aligned table across the self-test heading, each detail and fix wrapped inside its column', () => {
    const report = buildReport(
      [check('node', 'pass', 'ok'), check('bridge unread', 'fail', 'old mail waits in the spool of this session', { fix: 'run oh-hai bridge' })],
      { client_key: 'k', session: 'sess_x', steps },
    );
    const lines = renderText(report, { tty: true, color: false, columns: 40 }).trimEnd().split('\n');
    const rows = lines.filter((l) => /^(pass|fail|skip) /.test(l));
    // "bridge unread" is the longest name: every detail starts after it and two spaces, above and below the heading.
    const detail = 'fail  bridge unread  '.length;
    for (const l of rows) expect(l.slice(detail - 2, detail), l).toBe('  ');
    expect(lines).toContain('self-test: a throwaway session (client_key k), closed at the end');
    expect(lines.filter((l) => l.startsWith(' ')).every((l) => l.length - l.trimStart().length === detail)).toBe(true);
    expect([...rows, ...lines.filter((l) => l.startsWith(' '))].every((l) => l.length <= 40)).toBe(true);
    expect(lines.join('\n')).toMatch(/\n {21}fix: run oh-hai\n {21}bridge\n/);
    expect(lines.at(-1)).toBe('doctor: FAIL — failing: bridge unread, self-test send');
  });

  it('json: one envelope with the stable field names', () => {
    const parsed = JSON.parse(
      renderJson(buildReport([check('node', 'pass', 'ok', { measured: { version: '20.18.1' } })], { client_key: 'k', session: null, steps })),
    );
    expect(Object.keys(parsed)).toEqual(['status', 'checks', 'self_test']);
    expect(parsed.checks[0]).toEqual({ name: 'node', status: 'pass', detail: 'ok', measured: { version: '20.18.1' } });
    expect(Object.keys(parsed.self_test)).toEqual(['status', 'client_key', 'session', 'steps', 'failed']);
    expect(parsed.self_test.steps[1]).toEqual({ name: 'send', status: 'fail', ms: 5, detail: 'the Hub answered 503', fix: 'again' });
  });
});
