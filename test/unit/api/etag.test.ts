import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startGate, type Gate } from '../../helpers/in-process.js';

// Entity tags as EVOK's web framework sends them (the SHA-1 of the body, in
// quotes), 304 for a matching If-None-Match, and HEAD answered like GET
// without a body.

let gate: Gate;

before(async () => {
  gate = await startGate();
});

after(async () => {
  await gate.close();
});

const at = (path: string, init?: RequestInit) => fetch(`${gate.baseUrl}${path}`, init);

function sha1Tag(body: string): string {
  return `"${createHash('sha1').update(body).digest('hex')}"`;
}

const READS = ['/rest/do/1_01', '/json/do/1_01', '/rest/all', '/rest/do/all', '/rest/do/1_01/value', '/rest/do/all/value', '/version'];

/**
 * `/rest/all` holds `modbus_slave`, whose `last_comm` ages by itself: its body
 * may rightly change between two requests. Tries a few times to catch two
 * requests that saw the same version; `check` throws when they did not.
 */
async function stable(path: string, check: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await check();
      return;
    } catch (error) {
      if (path !== '/rest/all' || attempt === 5) throw error;
    }
  }
}

describe('ETag on 200 GETs', () => {
  for (const path of READS) {
    test(`${path}: the SHA-1 of the body; If-None-Match with it gets 304 with no body`, () => stable(path, async () => {
      const first = await at(path);
      assert.equal(first.status, 200);
      const body = await first.text();
      const tag = first.headers.get('etag');
      assert.equal(tag, sha1Tag(body));
      const again = await at(path, { headers: { 'If-None-Match': tag! } });
      assert.equal(again.status, 304);
      assert.equal(await again.text(), '');
      assert.equal(again.headers.get('etag'), tag);
      assert.equal(again.headers.get('access-control-allow-origin'), '*', 'CORS headers stay on a 304');
    }));
  }

  test('weak tags, lists and * match; another tag does not', async () => {
    const tag = (await at('/rest/do/1_02')).headers.get('etag')!;
    for (const header of [`W/${tag}`, `"abc", ${tag}`, '*']) {
      assert.equal((await at('/rest/do/1_02', { headers: { 'If-None-Match': header } })).status, 304, header);
    }
    const other = await at('/rest/do/1_02', { headers: { 'If-None-Match': '"0123"' } });
    assert.equal(other.status, 200);
    assert.ok((await other.text()).length > 0);
  });

  test('a change makes a new tag: the old one gets the new body', async () => {
    const before = await at('/rest/do/1_03');
    const tag = before.headers.get('etag')!;
    const value = (await before.json()).value;
    const write = await at('/json/do/1_03', { method: 'POST', body: JSON.stringify({ value: value ? 0 : 1 }) });
    assert.equal(write.status, 200);
    assert.equal(write.headers.get('etag'), null, 'writes carry no tag');
    const after = await at('/rest/do/1_03', { headers: { 'If-None-Match': tag } });
    assert.equal(after.status, 200);
    const text = await after.text();
    assert.equal(JSON.parse(text).value, value ? 0 : 1);
    assert.equal(after.headers.get('etag'), sha1Tag(text));
    assert.notEqual(after.headers.get('etag'), tag);
  });

  test('errors carry no tag', async () => {
    const missing = await at('/rest/do/9_99');
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('etag'), null);
  });
});

describe('HEAD', () => {
  for (const path of READS) {
    test(`${path}: GET's status and headers, no body`, () => stable(path, async () => {
      const get = await at(path);
      const getBody = await get.text();
      const head = await at(path, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(getBody)));
      assert.equal(head.headers.get('content-type'), get.headers.get('content-type'));
      assert.equal(head.headers.get('etag'), get.headers.get('etag'));
    }));
  }

  test('an unknown circuit is a 404 with no body', async () => {
    const head = await at('/rest/do/9_99', { method: 'HEAD' });
    assert.equal(head.status, 404);
    assert.equal(await head.text(), '');
  });

  test('POST-only endpoints still refuse it', async () => {
    assert.equal((await at('/bulk', { method: 'HEAD' })).status, 405);
  });
});
