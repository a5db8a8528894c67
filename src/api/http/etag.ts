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

/** A device's current JSON as the bytes of a reply, and their entity tag. */
export interface DeviceReply {
  readonly text: string;
  readonly bytes: Buffer;
  readonly tag: string;
}

const deviceReplies = new WeakMap<Device, DeviceReply>();

/** The tag of a cached body (the /rest/all chunks), computed once per body. */
export function bufferEtag(body: Buffer | readonly Buffer[]): string {
  let tag = bufferTags.get(body);
  if (tag === undefined) bufferTags.set(body, (tag = etagOf(body)));
  return tag;
}

/**
 * The reply to a GET of the device whose current JSON is `text`: its bytes
 * and tag, made once per text. The device makes a new text only when its
 * state changed, so a reply lasts until the change feed's next change. Bytes
 * rather than the string: node:http then writes the ready header and body
 * buffers as they are, where a string body is appended to the header text
 * (a new string per reply) and encoded again in the socket write.
 */
export function deviceReply(device: Device, text: string): DeviceReply {
  const cached = deviceReplies.get(device);
  if (cached !== undefined && cached.text === text) return cached;
  const bytes = Buffer.from(text);
  const reply = { text, bytes, tag: etagOf(bytes) };
  deviceReplies.set(device, reply);
  return reply;
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
