import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Device } from '../../../src/devices/device.js';
import { deviceReply, etagOf } from '../../../src/api/http/etag.js';

// A device's GET reply (entity tag and body bytes) is made once per JSON text
// and reused until the text changes; its bytes are an allocation of their
// own, so a kept reply never holds one of Node's shared 8 KB buffer pools.

test('a device reply is made once per text, with the text as UTF-8 and its SHA-1 tag', () => {
  const device = {} as Device;
  const text = '{"dev":"ai","circuit":"1_01","value":2.5,"alias":"Küche"}';
  const first = deviceReply(device, text);
  assert.equal(first.bytes.toString('utf8'), text);
  assert.equal(first.tag, etagOf(text));
  assert.equal(deviceReply(device, `${text}`), first, 'the same text gives the same reply');
  const changed = deviceReply(device, text.replace('2.5', '2.6'));
  assert.notEqual(changed, first);
  assert.equal(changed.bytes.toString('utf8'), text.replace('2.5', '2.6'));
  assert.notEqual(changed.tag, first.tag);
});

test('a device reply owns its bytes (not a slice of a shared pool)', () => {
  const reply = deviceReply({} as Device, '{"dev":"do","circuit":"1_01","value":0}');
  assert.equal(reply.bytes.byteOffset, 0);
  assert.equal(reply.bytes.buffer.byteLength, reply.bytes.length);
});
