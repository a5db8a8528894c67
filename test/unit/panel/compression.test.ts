import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { chooseEncoding } from '../../../src/api/panel/serve.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// The panel page is sent compressed in the best encoding the browser accepts,
// with an ETag per encoding, so a reload costs a 304.

let daemon: SpawnedDaemon;
before(async () => {
  daemon = await spawnDaemon([]);
});
after(() => daemon.stop());

function raw(headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${daemon.baseUrl}/`, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('brotli, gzip or none as accepted, the same page in each, with Vary and an ETag per encoding', async () => {
  const plain = await raw({});
  assert.equal(plain.headers['content-encoding'], undefined);
  const page = plain.body.toString('utf8');
  assert.match(page, /^<!doctype html>/);
  const br = await raw({ 'Accept-Encoding': 'gzip, deflate, br' });
  assert.equal(br.headers['content-encoding'], 'br');
  assert.equal(brotliDecompressSync(br.body).toString('utf8'), page);
  const gzip = await raw({ 'Accept-Encoding': 'gzip' });
  assert.equal(gzip.headers['content-encoding'], 'gzip');
  assert.equal(gunzipSync(gzip.body).toString('utf8'), page);
  assert.equal(Number(gzip.headers['content-length']), gzip.body.length);
  assert.ok(gzip.body.length < plain.body.length / 2, `gzip ${gzip.body.length} B of ${plain.body.length} B`);
  const tags = new Set([plain, br, gzip].map((reply) => reply.headers['etag']));
  assert.equal(tags.size, 3, 'one ETag per encoding');
  for (const reply of [plain, br, gzip]) assert.equal(reply.headers['vary'], 'Accept-Encoding');
  // The security headers come with every encoding.
  assert.ok(gzip.headers['content-security-policy']);
});

test('If-None-Match with the tag of the encoding sent answers 304 without a body', async () => {
  const first = await raw({ 'Accept-Encoding': 'gzip' });
  const again = await raw({ 'Accept-Encoding': 'gzip', 'If-None-Match': String(first.headers['etag']) });
  assert.equal(again.status, 304);
  assert.equal(again.body.length, 0);
  // Another encoding's tag does not match: the page in brotli is a different body.
  const other = await raw({ 'Accept-Encoding': 'br', 'If-None-Match': String(first.headers['etag']) });
  assert.equal(other.status, 200);
});

test('Accept-Encoding is read with its weights', () => {
  assert.equal(chooseEncoding(undefined), 'identity');
  assert.equal(chooseEncoding('br;q=0, gzip'), 'gzip');
  assert.equal(chooseEncoding('gzip;q=0, br;q=0'), 'identity');
  assert.equal(chooseEncoding('*'), 'br');
  assert.equal(chooseEncoding('identity'), 'identity');
  assert.equal(chooseEncoding('GZIP;Q=0.5'), 'gzip');
});
