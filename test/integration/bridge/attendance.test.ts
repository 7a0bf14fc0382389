import { spawn } from 'node:child_process';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { STATE_FILES, isSameProcessAlive, stampOf } from '../../../src/spool/index.js';
import { collect, ohHaiBin, startOhHai } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/wait.js';
import { EPILOGUE, message, stage, type Stage } from './stage.js';

let st: Stage | null = null;
const kill: number[] = [];
afterEach(() => {
  for (const pid of kill.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  st?.cleanup();
  st = null;
});

const readerPid = (s: Stage): number | null => {
  const r = s.stateDir.read('reader');
  return r.state === 'ok' ? r.value.pid : null;
};

describe('reader attendance and signals', () => {
  for (const [signal, code, name, said] of [
    ['SIGINT', 130, 'interrupted', 'Ctrl-C \\(SIGINT\\)'],
    ['SIGTERM', 143, 'terminated', 'SIGTERM'],
  ] as const) {
    it(`${signal} while waiting exits ${code} with the STOPPED line (not FATAL) and the epilogue`, async () => {
      st = stage();
      st.consumerRunning();
      const child = startOhHai(['bridge', '--wait', '60'], { env: st.env });
      const done = collect(child);
      await waitFor(() => readerPid(st!) === child.pid, { what: 'the reader record' });
      child.kill(signal);
      const r = await done;
      expect(r.code).toBe(code);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        new RegExp(`^oh-hai bridge: STOPPED \\(exit ${code}, ${name}\\) — stopped by ${said} after finishing the record in flight`, 'm'),
      );
      expect(r.stderr).toMatch(EPILOGUE);
      // The epilogue follows the stop line.
      expect(r.stderr.indexOf('lease —')).toBeGreaterThan(r.stderr.indexOf('STOPPED'));
      expect(r.stderr).not.toContain('FATAL');
    });
  }

  it('SIGTERM mid-burst finishes the record in flight, then exits 143: every printed line is whole and the cursor names the last', async () => {
    st = stage();
    st.consumerRunning();
    st.append(Array.from({ length: 2000 }, (_, i) => message(`burst ${i + 1}`)));
    const child = startOhHai(['bridge', '--raw', '--wait', '0'], { env: st.env });
    child.stdout!.once('data', () => child.kill('SIGTERM'));
    const r = await collect(child);
    expect(r.code).toBe(143);
    expect(r.stdout.endsWith('\n')).toBe(true);
    const seqs = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { seq: number }).seq);
    expect(seqs.length).toBeLessThan(2000);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(st.cursor().seq).toBe(seqs.length);
    expect(r.stderr).toMatch(/STOPPED \(exit 143, terminated\) — stopped by SIGTERM/);
    expect(r.stderr).toMatch(EPILOGUE);
  });

  it('a second agent in the same host program is refused with exit 10 naming the live holder', async () => {
    st = stage({ session: null });
    st.consumerRunning();
    // Both readers are children of this test process: the same host program, no declared key.
    const first = startOhHai(['bridge', '--wait', '60'], { env: st.env });
    const firstDone = collect(first);
    await waitFor(() => readerPid(st!) === first.pid, { what: 'the first reader to claim' });
    const second = await collect(startOhHai(['bridge', '--wait', '60'], { env: st.env }));
    expect(second.code).toBe(10);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(
      new RegExp(
        `FATAL \\(exit 10, reader_held\\) — another reader is attending this agent session: pid ${first.pid} on \\S+, holding for \\d+s, heartbeat \\d+s ago; its session sess_a expires 2026-09-18T14:48:07.000Z \\(Hub's clock; last renewed \\d+s ago\\)\\.`,
      ),
    );
    expect(second.stderr).toContain('Do not kill it');
    expect(second.stderr).toMatch(EPILOGUE);
    // The holder is untouched.
    expect(isSameProcessAlive(stampOf(first.pid!))).toBe('alive');
    first.kill('SIGTERM');
    expect((await firstDone).code).toBe(143);
  });

  it('says "could not read the holder\'s record" when that is the truth, never "pid unknown"', async () => {
    st = stage({ session: null });
    st.consumerRunning();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(st.stateDir.path('reader.json'), '{"pid": garbage', { mode: 0o600 });
    const r = await collect(startOhHai(['bridge', '--wait', '0'], { env: st.env }));
    expect(r.code).toBe(10);
    expect(r.stderr).toMatch(/another reader's record exists and could not be read \(.*reader\.json is not valid JSON/);
    expect(r.stderr).not.toMatch(/pid unknown/i);
  });

  it('the same agent re-running (declared key) displaces its previous reader and never sees 10', async () => {
    st = stage();
    st.consumerRunning();
    const first = startOhHai(['bridge', '--wait', '60'], { env: st.env });
    const firstDone = collect(first);
    await waitFor(() => readerPid(st!) === first.pid, { what: 'the first reader to claim' });
    const second = startOhHai(['bridge', '--wait', '60'], { env: st.env });
    const secondDone = collect(second);
    const old = await firstDone;
    expect(old.code, `${old.signal} ${old.stderr}`).toBe(0);
    expect(old.stderr).toMatch(new RegExp(`a newer reader of this agent session \\(pid ${second.pid} on \\S+\\) took over`));
    expect(old.stderr).toMatch(EPILOGUE);
    await waitFor(() => readerPid(st!) === second.pid, { what: 'the second reader to hold the entry' });
    second.kill('SIGINT');
    const r = await secondDone;
    expect(r.code).toBe(130);
    expect(r.stderr).toContain(`took over from this agent session's previous reader (pid ${first.pid}`);
    expect(readFileSync(st.stateDir.path(STATE_FILES.log), 'utf8')).toContain(`reader: displaced the previous reader pid ${first.pid} (declared)`);
  });

  it('a dead previous reader is displaced silently', async () => {
    st = stage({ session: null });
    st.consumerRunning();
    const first = startOhHai(['bridge', '--wait', '60'], { env: st.env });
    const firstDone = collect(first);
    await waitFor(() => readerPid(st!) === first.pid, { what: 'the first reader to claim' });
    first.kill('SIGKILL');
    await firstDone;
    const r = await collect(startOhHai(['bridge', '--wait', '0'], { env: st.env }));
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/took over|FATAL/);
    // Nor in bridge.log: a dead holder's record is what every exit of the re-run loop leaves.
    let log = '';
    try {
      log = readFileSync(st.stateDir.path(STATE_FILES.log), 'utf8');
    } catch {
      // no log at all is silent too
    }
    expect(log).not.toContain('displaced the previous reader');
  });

  it('stops when the process that started it is gone (nohup oh-hai bridge & outlives no shell)', async () => {
    st = stage();
    st.consumerRunning();
    const errFile = path.join(st.temp.root, 'reader.err');
    const readerJson = st.stateDir.path('reader.json');
    // The shell starts the reader in the background, waits (by condition) until it has claimed, then exits.
    const sh = spawn(
      'sh',
      [
        '-c',
        `nohup "${process.execPath}" "${ohHaiBin}" bridge --wait 60 >/dev/null 2>"${errFile}" & r=$!; while [ ! -f "${readerJson}" ] && kill -0 $r 2>/dev/null; do sleep 0.02; done; echo $r`,
      ],
      { env: st.env, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let out = '';
    sh.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    await new Promise((r) => sh.once('exit', r));
    const pid = Number(out.trim());
    kill.push(pid);
    expect(st.stateDir.read('reader').state, readFileSync(errFile, 'utf8')).toBe('ok');
    await waitFor(() => isSameProcessAlive(stampOf(pid)) === 'dead' || readFileSync(errFile, 'utf8').includes('lease —'), {
      what: 'the orphaned reader to stop',
    });
    await waitFor(() => readFileSync(errFile, 'utf8').includes('lease —'), { what: 'its epilogue' });
    const err = readFileSync(errFile, 'utf8');
    expect(err).toMatch(/the process that started this reader \(pid \d+\) is gone/);
    expect(err).toMatch(EPILOGUE);
  });
});
