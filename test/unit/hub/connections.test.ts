import { createServer, type ServerResponse } from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { capConnections } from '../../../src/hub/server/connections.js';
import { waitFor } from '../../helpers/wait.js';

/** A raw client socket: what it read so far, and whether it was closed. */
function client(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const c = { socket, read: '', closed: false };
  socket.on('data', (d) => (c.read += d.toString()));
  socket.on('close', () => (c.closed = true));
  socket.on('error', () => {});
  return c;
}
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: hub\r\nConnection: keep-alive\r\n\r\n`;

describe('the connection cap: a socket whose request was answered is idle again', () => {
  const held: ServerResponse[] = [];
  const sockets: net.Socket[] = [];
  const server = createServer((req, res) => {
    if (req.url === '/hold') held.push(res);
    else res.end('ok');
  });
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    for (const r of held) r.destroy();
    await new Promise((r) => server.close(r));
  });

  it('sheds a kept-alive socket after its answer (not the one held), so a newcomer is let in', async () => {
    capConnections(server, 2);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const answered = client(port);
    sockets.push(answered.socket);
    answered.socket.write(get('/'));
    await waitFor(() => answered.read.endsWith('ok'), { what: 'the first answer' });
    const holding = client(port);
    sockets.push(holding.socket);
    holding.socket.write(get('/hold'));
    await waitFor(() => held.length === 1, { what: 'the held request' });
    // The third socket is over the cap of 2: the oldest with nothing in flight goes.
    const newcomer = client(port);
    sockets.push(newcomer.socket);
    await waitFor(() => answered.closed, { what: 'the answered socket shed' });
    newcomer.socket.write(get('/'));
    await waitFor(() => newcomer.read.endsWith('ok'), { what: "the newcomer's answer" });
    expect([holding.closed, newcomer.closed]).toEqual([false, false]);
  });
});
