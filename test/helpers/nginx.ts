import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './cli.js';
import { reservePort } from './ports.js';
import { waitFor } from './wait.js';

/** The shipped configuration the balancer tests run (deploy/nginx). */
export const SHIPPED_CONF = path.join(repoRoot, 'deploy', 'nginx', 'oh-hai-hub.conf');

export function findNginx(): string | null {
  for (const p of ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx']) if (existsSync(p)) return p;
  return null;
}

export interface Balancer {
  url: string;
  /** The access log so far, one entry per finished request: which client connection carried it. */
  requests(): BalancedRequest[];
  stop(): Promise<void>;
}

/** One access-log line: nginx's serial number of the client connection and the request's number on it. */
export interface BalancedRequest {
  connection: number;
  connectionRequests: number;
  status: number;
  uri: string;
}

const LOG_FORMAT = "log_format oh_hai_test '$connection $connection_requests $status $request_uri';";

function parseAccessLog(text: string): BalancedRequest[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const m = /^(\d+) (\d+) (\d+) (\S+)$/.exec(line);
      if (!m) throw new Error(`nginx access log line not in the test format: ${JSON.stringify(line)}`);
      return { connection: Number(m[1]), connectionRequests: Number(m[2]), status: Number(m[3]), uri: m[4]! };
    });
}

/**
 * The shipped config with only what a test must change: the listen address (a free loopback
 * port) and the upstream servers (these instances), each keeping its shipped parameters.
 */
export function testConf(shipped: string, listenPort: number, instancePorts: number[]): string {
  const servers = [...shipped.matchAll(/^\s*server 127\.0\.0\.1:\d+( [^;]*)?;$/gm)];
  if (servers.length === 0) throw new Error('deploy/nginx/oh-hai-hub.conf lists no upstream server');
  const params = servers[0]![1] ?? '';
  const lines = instancePorts.map((p) => `    server 127.0.0.1:${p}${params};`).join('\n');
  let out = shipped.replace(/^\s*server 127\.0\.0\.1:\d+( [^;]*)?;\n/gm, '');
  out = out.replace(/(upstream oh_hai_hub \{\n)/, `$1${lines}\n`);
  const listen = /^(\s*)listen \d+;$/m;
  if (!listen.test(out)) throw new Error('deploy/nginx/oh-hai-hub.conf has no "listen <port>;" line');
  return out.replace(listen, `$1listen 127.0.0.1:${listenPort};`);
}

/** nginx as a throwaway process: its own prefix, conf and logs in a temp dir, on loopback. */
export async function startBalancer(instancePorts: number[]): Promise<Balancer> {
  const bin = findNginx();
  if (bin === null) throw new Error('nginx not found (Debian: apt-get install nginx)');
  const prefix = mkdtempSync(path.join(os.tmpdir(), 'oh-hai-nginx-'));
  for (const d of ['logs', 'tmp']) mkdirSync(path.join(prefix, d));
  // Reserved until stop(): no listen(0) or connect() elsewhere takes it before nginx listens.
  const reserved = await reservePort();
  const port = reserved.port;
  writeFileSync(path.join(prefix, 'oh-hai-hub.conf'), testConf(readFileSync(SHIPPED_CONF, 'utf8'), port, instancePorts));
  const accessLog = path.join(prefix, 'logs', 'access.log');
  const temp = (name: string) => `${name}_temp_path ${path.join(prefix, 'tmp', name)};`;
  writeFileSync(
    path.join(prefix, 'nginx.conf'),
    [
      `pid ${path.join(prefix, 'nginx.pid')};`,
      `error_log ${path.join(prefix, 'logs', 'error.log')} warn;`,
      'worker_processes 1;',
      'events { worker_connections 4096; }',
      'http {',
      `  ${LOG_FORMAT}`,
      `  access_log ${accessLog} oh_hai_test;`,
      `  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}`,
      `  include ${path.join(prefix, 'oh-hai-hub.conf')};`,
      '}',
    ].join('\n'),
  );
  let err = '';
  const proc: ChildProcess = spawn(bin, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`nginx exited: ${err}`);
        try {
          await fetch(`${url}/v1/capability`);
          return true;
        } catch {
          return null;
        }
      },
      { what: 'nginx to listen' },
    );
  } catch (e) {
    proc.kill('SIGKILL');
    reserved.release();
    rmSync(prefix, { recursive: true, force: true });
    throw e;
  }
  return {
    url,
    requests: () => (existsSync(accessLog) ? parseAccessLog(readFileSync(accessLog, 'utf8')) : []),
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGQUIT');
        await exited;
      }
      reserved.release();
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
