// Shared by the Hub benches that send (consumer-drain, hub-sse, send-cost): a sender as a
// long-running process is one — node:http over kept-alive connections, one per request in
// flight. The load generator shares the machine with the Hub, so it must cost less than what it
// measures: fetch (undici) cost this process 0.5–0.8 ms of CPU per request warm and ~1.6 ms for
// a run's first 2,000, against ~0.15 ms for node:http with keep-alive — twice the Hub's own
// CPU per send, and the queue phase measured the sender (docs/performance.md). Never run by CI.
import { Agent, request } from 'node:http';

/**
 * `call(token, method, path, body?)` against `url`: the parsed JSON, or a throw naming the
 * status. At most `maxSockets` connections, kept alive between requests.
 */
export function keepAliveCaller(url, maxSockets) {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const attempt = (token, method, p, body) =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const headers = { authorization: `Bearer ${token}` };
      if (data !== undefined) headers['content-type'] = 'application/json';
      const req = request(url + p, { method, agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d) => (text += d));
        // A connection reset mid-answer is this call's failure (made again below), not the process's.
        res.on('error', reject);
        res.on('end', () => (res.statusCode >= 400 ? reject(new Error(`${method} ${p} → ${res.statusCode} ${text}`)) : resolve(JSON.parse(text))));
      });
      req.on('error', reject);
      req.end(data);
    });
  // A kept-alive socket the Hub closed as idle (its keep-alive timeout) resets the next request
  // on it before the Hub read it: that one is made again.
  const call = (token, method, p, body) =>
    attempt(token, method, p, body).catch((e) => (e.code === 'ECONNRESET' ? attempt(token, method, p, body) : Promise.reject(e)));
  call.close = () => agent.destroy();
  return call;
}
