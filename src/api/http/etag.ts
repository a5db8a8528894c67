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

/** A device's GET reply for one of its JSON texts: the entity tag and the body as bytes, made once per text. */
export interface DeviceReply {
  readonly text: string;
  readonly tag: string;
  readonly bytes: Buffer;
}

const deviceReplies = new WeakMap<Device, DeviceReply>();

/** The tag of a cached body (the /rest/all chunks), computed once per body. */
export function bufferEtag(body: Buffer | readonly Buffer[]): string {
  let tag = bufferTags.get(body);
  if (tag === undefined) bufferTags.set(body, (tag = etagOf(body)));
  return tag;
}

/**
 * The reply to a GET of `device` whose current JSON is `text`: made once per
 * text (a new text comes only with a change of the device), then reused.
 * The body is written as bytes, as a bare server would: given the text,
 * node:http joined it to the header block and encoded the two as UTF-8 on
 * every reply, a 500-byte string flattened in V8's heap and then copied
 * into a malloc'ed buffer (perf under bench:get: Socket._writev,
 * StreamBase::Writev, WriteUtf8, malloc and free, about 1 µs a request
 * more than the bare server's). Its own allocation, not a slice of Node's
 * shared 8 KB pool, which one kept slice would hold whole: a few hundred
 * bytes per device that clients read.
 */
export function deviceReply(device: Device, text: string): DeviceReply {
  const cached = deviceReplies.get(device);
  if (cached !== undefined && cached.text === text) return cached;
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  const reply: DeviceReply = { text, tag: etagOf(text), bytes };
  deviceReplies.set(device, reply);
  return reply;
}

let lastText: string | undefined;
let lastTextTag = '';

/** The tag of a text that rarely changes (the version, the OpenAPI document): hashed again only when it differs from the last. */
export function textEtag(text: string): string {
  if (text !== lastText) {
    lastTextTag = etagOf(text);
    lastText = text;
  }
  return lastTextTag;
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
