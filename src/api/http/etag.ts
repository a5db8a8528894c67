import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Device } from '../../devices/device.js';

// Entity tags of GET replies, as EVOK's web framework makes them: the SHA-1 of
// the body in quotes. A client that sends it back in If-None-Match gets a 304
// without the body. Device texts and the /rest/all buffer are cached, so their
// tags are too: hashed once per change, not once per request.

export function etagOf(body: string | Buffer | readonly Buffer[]): string {
  const hash = createHash('sha1');
  if (typeof body === 'string' || Buffer.isBuffer(body)) hash.update(body);
  else for (const chunk of body) hash.update(chunk);
  return `"${hash.digest('hex')}"`;
}

const bufferTags = new WeakMap<object, string>();
const deviceTags = new WeakMap<Device, { text: string; tag: string }>();

/** The tag of a cached body (the /rest/all chunks), computed once per body. */
export function bufferEtag(body: Buffer | readonly Buffer[]): string {
  let tag = bufferTags.get(body);
  if (tag === undefined) bufferTags.set(body, (tag = etagOf(body)));
  return tag;
}

/** The tag of `text`, the device's current JSON, computed once per text. */
export function deviceEtag(device: Device, text: string): string {
  const cached = deviceTags.get(device);
  if (cached !== undefined && cached.text === text) return cached.tag;
  const tag = etagOf(text);
  deviceTags.set(device, { text, tag });
  return tag;
}

const TAG_LIST = /\*|(?:W\/)?"[^"]*"/g;

/** Whether the request's If-None-Match names `etag` (weak comparison, `*` matches all). */
export function notModified(req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match'];
  if (header === undefined) return false;
  for (const [candidate] of header.matchAll(TAG_LIST)) {
    if (candidate === '*' || candidate === etag || candidate === `W/${etag}`) return true;
  }
  return false;
}
