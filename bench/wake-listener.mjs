// A bare LISTENer on the Hubs' wake-up channel, for bench/hub-cluster.mjs --trace: a process
// that does nothing else, so the instant it hears a notification (CLOCK_MONOTONIC, the Hubs'
// trace clock) is PostgreSQL's signalling and the socket, without a busy Hub's event loop in it.
// Beside the receiving Hub's own `ev.heard` hop it splits "batch written → woken" into the
// database's part and the Hub's.
// Usage: node bench/wake-listener.mjs <database url> <channel> <out file>; prints `listening`
// once LISTEN is in place, and writes `<ns> <payload>` lines to the file on SIGTERM.
import { writeFileSync } from 'node:fs';
import pg from 'pg';

const [url, channel, out] = process.argv.slice(2);
const heard = [];
const client = new pg.Client({ connectionString: url, application_name: 'oh-hai-bench-listen' });
client.on('notification', (n) => heard.push(`${process.hrtime.bigint()} ${n.payload}`));
await client.connect();
await client.query(`LISTEN ${channel}`);
process.on('SIGTERM', () => {
  writeFileSync(out, heard.length === 0 ? '' : `${heard.join('\n')}\n`);
  process.exit(0);
});
console.log('listening');
