import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/cli.js';

/**
 * FdOutput (src/cli/fd-output.ts) is what the bridge prints through. Each case runs it in a
 * child process on a real pipe, since its job is what write(2) does on one.
 */
const fdOutput = pathToFileURL(path.join(repoRoot, 'dist', 'cli', 'fd-output.js')).href;

interface Child {
  stdout: Buffer;
  stderr: string;
  code: number | null;
}

/** Run `body` (an ES module body with `out`, an FdOutput on fd 1, in scope). */
function child(body: string, opts: { holdStdoutUntil?: string; closeStdout?: boolean } = {}): Promise<Child> {
  const script = `import { FdOutput } from ${JSON.stringify(fdOutput)};\nconst out = new FdOutput(1, () => process.stdout);\n${body}`;
  const p = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  let stderr = '';
  if (opts.closeStdout) p.stdout.destroy();
  else if (opts.holdStdoutUntil !== undefined) p.stdout.pause();
  p.stdout.on('data', (d: Buffer) => chunks.push(d));
  p.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    if (opts.holdStdoutUntil !== undefined && stderr.includes(opts.holdStdoutUntil)) p.stdout.resume();
  });
  return new Promise((resolve) => p.on('close', (code) => resolve({ stdout: Buffer.concat(chunks), stderr, code })));
}

describe('FdOutput', () => {
  it('writes in order and calls back once the kernel has the bytes', async () => {
    const r = await child(`
      for (let i = 0; i < 200; i++) await new Promise((ok, no) => out.write('line ' + i + ' \\u2028 é\\n', (e) => (e ? no(e) : ok())));
      process.stderr.write('pending ' + out.writableLength);
    `);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.toString('utf8')).toBe(Array.from({ length: 200 }, (_, i) => `line ${i} \u2028 é\n`).join(''));
    expect(r.stderr).toBe('pending 0');
  });

  it('on a descriptor left non-blocking, a full pipe hands the rest to Node’s stream, in order, nothing lost', async () => {
    // Touching process.stdout makes fd 1 non-blocking (libuv); the parent reads nothing until
    // the child has written 1 MiB, so the pipe fills and write(2) answers EAGAIN.
    const r = await child(
      `
      process.stdout;
      out.write('A'.repeat(1 << 20));
      out.write('B\\n', () => process.stderr.write('flushed '));
      process.stderr.write('written; pending ' + (out.writableLength > 0) + '\\n');
    `,
      { holdStdoutUntil: 'written' },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('written; pending true');
    expect(r.stderr).toContain('flushed ');
    expect(r.stdout.length).toBe((1 << 20) + 2);
    expect(r.stdout.subarray(-3).toString()).toBe('AB\n');
  });

  it('fails the write (and writeNow) and emits error when nobody reads (EPIPE), instead of killing the process', async () => {
    const r = await child(
      `
      await new Promise((r) => setTimeout(r, 0));
      out.on('error', (e) => process.stderr.write('error event ' + e.code + '\\n'));
      let last;
      for (let i = 0; i < 1000 && !last; i++) out.write('x'.repeat(65536), (e) => { if (e) last = e; });
      await new Promise((r) => setImmediate(r));
      process.stderr.write('callback ' + (last && last.code) + '\\n');
      await out.writeNow('x').catch((e) => process.stderr.write('writeNow rejected ' + e.code + '\\n'));
    `,
      { closeStdout: true },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('callback EPIPE');
    expect(r.stderr).toContain('writeNow rejected EPIPE');
    expect(r.stderr).toContain('error event EPIPE');
  });

  it('writeNow answers null once write(2) has taken the bytes, and a promise when a turn of the event loop is due', async () => {
    const r = await child(`
      let nulls = 0;
      for (let i = 0; i < 200; i++) {
        const p = out.writeNow('line ' + i + ' \\u2028 é\\n');
        if (p === null) nulls++;
        else await p;
      }
      // Two milliseconds without a turn: the next write must give the event loop one.
      const t = process.hrtime.bigint();
      while (process.hrtime.bigint() - t < 2_000_000n);
      let turned = false;
      setImmediate(() => (turned = true));
      const due = out.writeNow('last\\n');
      process.stderr.write('nulls ' + (nulls > 0) + ', due ' + (due !== null) + ', ');
      await due;
      process.stderr.write('turned ' + turned);
    `);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.toString('utf8')).toBe(Array.from({ length: 200 }, (_, i) => `line ${i} \u2028 é\n`).join('') + 'last\n');
    expect(r.stderr).toBe('nulls true, due true, turned true');
  });
});
