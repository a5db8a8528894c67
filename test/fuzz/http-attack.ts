import { READ_TOKEN, WRITE_TOKEN, attackerSocket, closedWithin, count, letGo, runWorkers, sleep, type Target } from './common.js';
import type { Random } from './random.js';

// Raw HTTP at the daemon's port: random methods, paths, headers and bodies,
// several requests pipelined on one connection, requests cut off anywhere,
// sent whole or dripped, answers read or never read, and the connection let
// go by a reset, a FIN or a plain close at a random moment.

const PATHS = [
  '/rest/do/1_01', '/rest/relay/1_01', '/json/do/1_01', '/rest/ro/2_01', '/json/ro/2_01', '/rest/di/1_01', '/rest/ai/1_01',
  '/rest/ao/1_01', '/rest/all', '/json/all', '/rest/di', '/rest/temp', '/rest/sensor', '/rest/owbus', '/rest/modbus_slave',
  '/rest/wd/1_01', '/rest/led/1_01', '/rest/register/1_1', '/bulk', '/rpc', '/version', '/metrics', '/', '/ws', '/json/do',
];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'CONNECT', 'TRACE', 'G\0T', 'PRI'];
const HOSTS = (port: number) => [`127.0.0.1:${port}`, `localhost:${port}`, 'attacker.example', '', `127.0.0.1:${port}:1`, '[::1]', 'x'.repeat(300)];
const ORIGINS = (port: number) => [`http://127.0.0.1:${port}`, 'http://evil.example', 'null', 'file://', '\u00ff'];
const AUTHORIZATIONS = [`Bearer ${READ_TOKEN}`, `Bearer ${WRITE_TOKEN}`, 'Bearer wrong', 'Basic Zm9vOmJhcg==', 'Bearer', `Bearer ${WRITE_TOKEN}x`];
const CONTENT_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16'];

function path(rng: Random): string {
  const base = rng.pick(PATHS);
  return rng.weighted<string>([
    [12, base],
    [2, `${base}?${rng.pick(['errors=1', 'token=' + WRITE_TOKEN, 'value=1', 'a='.repeat(rng.int(1, 500)), '%zz'])}`],
    [1, `${base}/${encodeURIComponent(rng.bytes(rng.int(1, 12)).toString('latin1'))}`],
    [1, `/${'a/'.repeat(rng.int(1, 2000))}`],
    [1, rng.pick(['//', '/rest//do', '/rest/do/%', '/rest/do/%E0%A4%A', '/../../etc/passwd', '*', 'http://x/rest/all', '/rest/do/1_01#x'])],
    [1, '/' + rng.bytes(rng.int(1, 40)).toString('latin1').replace(/[\r\n ]/g, '_')],
  ]);
}

function body(rng: Random): Buffer {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  return rng.weighted<() => Buffer>([
    [3, () => Buffer.alloc(0)],
    [3, () => json({ value: rng.pick([0, 1, '1', 'on', true, -1, 1e308, null, 'x'.repeat(rng.int(0, 200))]) })],
    [2, () => Buffer.from(`value=${rng.pick(['0', '1', 'abc', '%ZZ', ''])}&${rng.pick(['mode=Simple', 'alias=al_' + rng.int(0, 9), 'x=y'])}`)],
    [2, () => json([{ cmd: rng.pick(['set', 'full', 'all', 'bogus']), dev: rng.pick(['do', 'relay', 'ro', 'ai', 'x']), circuit: rng.pick(['1_01', '2_01', '9_99']), value: rng.int(0, 1) }])],
    [2, () => json({ jsonrpc: '2.0', id: rng.int(0, 9), method: rng.pick(['output_set', 'relay_set', 'input_get', 'all', 'nope']), params: rng.pick([[], ['1_01', 1], { circuit: '1_01' }, 'x']) })],
    [2, () => rng.bytes(rng.length(4096))],
    [1, () => Buffer.from('{"value":' + '['.repeat(rng.int(1, 5000)))],
    [1, () => Buffer.alloc(rng.int(65_536, 300_000), 0x61)],
  ])();
}

function chunked(payload: Buffer, rng: Random): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < payload.length; ) {
    const size = Math.min(payload.length - at, rng.int(1, 4096));
    parts.push(Buffer.from(`${size.toString(16)}${rng.chance(0.05) ? ';ext=' + 'e'.repeat(rng.int(1, 20000)) : ''}\r\n`), payload.subarray(at, at + size), Buffer.from('\r\n'));
    at += size;
  }
  if (rng.chance(0.9)) parts.push(Buffer.from(rng.chance(0.9) ? '0\r\n\r\n' : 'zz\r\n\r\n'));
  return Buffer.concat(parts);
}

/** One request's bytes, well-formed or not. */
export function httpRequest(rng: Random, port: number): Buffer {
  const method = rng.pick(METHODS);
  const payload = method === 'GET' && rng.chance(0.8) ? Buffer.alloc(0) : body(rng);
  const headers: string[] = [];
  if (rng.chance(0.95)) headers.push(`Host: ${rng.weighted([[8, `127.0.0.1:${port}`], [2, rng.pick(HOSTS(port))]])}`);
  if (rng.chance(0.6)) headers.push(`Authorization: ${rng.pick(AUTHORIZATIONS)}`);
  if (rng.chance(0.2)) headers.push(`Origin: ${rng.pick(ORIGINS(port))}`);
  if (payload.length > 0 || rng.chance(0.1)) headers.push(`Content-Type: ${rng.pick(CONTENT_TYPES)}`);
  let framed = payload;
  const framing = payload.length === 0 && rng.chance(0.7) ? 'none' : rng.weighted<string>([[6, 'length'], [2, 'chunked'], [1, 'wrong length'], [1, 'both'], [1, 'garbage length']]);
  if (framing === 'length') headers.push(`Content-Length: ${payload.length}`);
  else if (framing === 'chunked') {
    headers.push('Transfer-Encoding: chunked');
    framed = chunked(payload, rng);
  } else if (framing === 'wrong length') headers.push(`Content-Length: ${Math.max(0, payload.length + rng.int(-10, 100_000))}`);
  else if (framing === 'both') {
    headers.push(`Content-Length: ${payload.length}`, 'Transfer-Encoding: chunked');
    framed = chunked(payload, rng);
  } else if (framing === 'garbage length') headers.push(`Content-Length: ${rng.pick(['-1', '1e3', 'abc', '99999999999999999999', '1, 2', ''])}`);
  if (rng.chance(0.3)) headers.push(`Connection: ${rng.pick(['keep-alive', 'close', 'Upgrade', 'keep-alive, Upgrade'])}`);
  if (rng.chance(0.1)) headers.push(`Upgrade: ${rng.pick(['websocket', 'h2c', 'x'])}`);
  if (rng.chance(0.05)) headers.push('Expect: 100-continue');
  for (let i = rng.weighted([[8, 0], [2, rng.int(1, 5)], [1, rng.int(50, 300)]]); i > 0; i--) {
    headers.push(`X-${rng.int(0, 1e6)}: ${rng.chance(0.9) ? 'v'.repeat(rng.length(20_000)) : rng.bytes(rng.int(1, 30)).toString('latin1')}`);
  }
  if (rng.chance(0.03)) headers.push(rng.pick(['NoColon', ' folded: line', 'Bad Name: x', ':', 'Host: second.example']));
  const line = rng.chance(0.97) ? `${method} ${path(rng)} HTTP/1.${rng.chance(0.9) ? 1 : 0}` : rng.pick(['GET /', 'GET / HTTP/2.0', 'GET / HTTP/1.1 x', '\x16\x03\x01\x02\x00']);
  const eol = rng.chance(0.98) ? '\r\n' : '\n';
  return Buffer.concat([Buffer.from(`${line}${eol}${headers.join(eol)}${headers.length ? eol : ''}${eol}`, 'latin1'), framed]);
}

export async function httpAttack(target: Target, rng: Random, workers: number): Promise<void> {
  const { counts } = target;
  await runWorkers(target, rng, 'http', workers, async (rng) => {
    const socket = await attackerSocket(target, rng, 'http');
    if (!socket) return;
    const reading = rng.chance(0.85);
    if (reading) {
      socket.on('data', (chunk: Buffer) => {
        // Status lines seen (a chunk boundary can split one; close enough for a count).
        for (let at = chunk.indexOf('HTTP/1.'); at >= 0; at = chunk.indexOf('HTTP/1.', at + 7)) count(counts, 'http.responses');
      });
    } else {
      socket.pause();
      count(counts, 'http.paused_readers');
    }
    const pipelined = rng.weighted([[6, 1], [3, rng.int(2, 5)], [1, rng.int(6, 40)]]);
    const requests = Array.from({ length: pipelined }, () => httpRequest(rng, target.port));
    count(counts, 'http.requests', pipelined);
    let bytes = Buffer.concat(requests);
    const how = rng.weighted<string>([[6, 'whole'], [2, 'cut'], [1, 'drip']]);
    if (how === 'cut') {
      bytes = bytes.subarray(0, rng.int(0, bytes.length));
      count(counts, 'http.cut_off');
    }
    if (how === 'drip') {
      for (let at = 0; at < bytes.length && !socket.destroyed && !target.stopped(); ) {
        const size = rng.int(1, 64);
        socket.write(bytes.subarray(at, at + size));
        at += size;
        await sleep(rng.int(0, 30));
        if (rng.chance(0.01)) break;
      }
    } else socket.write(bytes);
    // Then a random moment: at once, a little later, or once the daemon closes (bounded).
    await closedWithin(socket, rng.weighted([[3, 0], [4, rng.int(1, 200)], [2, rng.int(200, 1500)]]));
    const gone = letGo(socket, rng);
    count(counts, `http.let_go.${gone}`);
  });
}
