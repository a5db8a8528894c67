import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestError } from '../../registry/request-error.js';
import { etagOf, notModified } from './etag.js';

// Writing replies. Bodies arrive as ready bytes or strings, so the hot path is
// a header object reused across requests and one write.

export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'x-requested-with, content-type, authorization',
  'Access-Control-Allow-Methods': 'POST, GET, OPTIONS',
};

/**
 * A reply's headers as node:http's flat raw list (name, value, name, value…),
 * which writeHead takes as it is. Given an object, node:http walks its keys
 * with a for-in and a hasOwnProperty call per key on every reply; the list it
 * walks by index. Same headers, same order, same validation.
 */
type Headers = readonly string[];

/** `fields` and `extra` as one frozen raw header list (see Headers). */
function rawHeaders(fields: Readonly<Record<string, string>>, extra: Readonly<Record<string, string>>): Headers {
  const list: string[] = [];
  for (const [name, value] of Object.entries({ ...fields, ...extra })) list.push(name, value);
  return Object.freeze(list);
}

/** The fixed headers of each kind of reply, built once per CORS decision rather than per request. */
export interface ReplyHeaders {
  json: Readonly<Record<string, string>>;
  text: Readonly<Record<string, string>>;
  empty: Readonly<Record<string, string>>;
  /** `json` and `text` with each Content-Length seen, made once (see withLength). */
  readonly sized: { json: Map<number, Headers>; text: Map<number, Headers> };
  /** The same for reads, per entity tag (tags are cached per body, so this is per body). */
  readonly tagged: { json: Map<string, Headers>; text: Map<string, Headers> };
}

export function replyHeadersWith(cors: Readonly<Record<string, string>>): ReplyHeaders {
  return {
    json: { 'Content-Type': 'application/json', ...cors },
    text: { 'Content-Type': 'text/html; charset=UTF-8', ...cors },
    empty: { ...cors },
    sized: { json: new Map(), text: new Map() },
    tagged: { json: new Map(), text: new Map() },
  };
}

/** Distinct body lengths kept per kind of reply (~130 KB at most); past that, headers are made per reply. */
const MAX_SIZED_HEADERS = 512;

/**
 * The headers of a reply with a body of `length` bytes, as one object made
 * once per length. A fresh header object per reply (a spread, or an array)
 * made V8 promote some 150 bytes per request out of the young generation
 * (bench, --trace-gc-nvp: 13-19 KB per scavenge against under 0.3 KB with a
 * reused object), which grew the old generation by ~10 MB under load and
 * added mark-compact pauses. Device bodies come in a few hundred lengths.
 */
function withLength(headers: ReplyHeaders, kind: 'json' | 'text', length: number): Headers {
  const sized = headers.sized[kind];
  let found = sized.get(length);
  if (found === undefined) {
    // Node reads these objects and never changes them; frozen, nothing else can either.
    found = rawHeaders(headers[kind], { 'Content-Length': String(length) });
    if (sized.size < MAX_SIZED_HEADERS) sized.set(length, found);
  }
  return found;
}

/** A read's headers with its length and entity tag, one object per tag (see withLength for why). */
function withEtag(headers: ReplyHeaders, kind: 'json' | 'text', length: number, etag: string): Headers {
  const tagged = headers.tagged[kind];
  let found = tagged.get(etag);
  if (found === undefined) {
    found = rawHeaders(headers[kind], { ETag: etag, 'Content-Length': String(length) });
    // Bodies change for ever (counters, analog values): start afresh rather than grow.
    if (tagged.size >= MAX_SIZED_HEADERS) tagged.clear();
    tagged.set(etag, found);
  }
  return found;
}

/** EVOK's CORS answer; used for every reply not given other headers through useReplyHeaders. */
const EVOK_REPLY_HEADERS = replyHeadersWith(CORS_HEADERS);

// A side table rather than a property on the response, so replies that keep
// EVOK's default cost one failed lookup and the response type stays Node's.
const chosenHeaders = new WeakMap<ServerResponse, ReplyHeaders>();

export function useReplyHeaders(res: ServerResponse, headers: ReplyHeaders): void {
  chosenHeaders.set(res, headers);
}

function headersOf(res: ServerResponse): ReplyHeaders {
  return chosenHeaders.get(res) ?? EVOK_REPLY_HEADERS;
}

export function sendJson(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, withLength(headersOf(res), 'json', Buffer.byteLength(body)) as string[]);
  res.end(body);
}

/**
 * A successful GET (or HEAD: Node leaves the body out by itself) with its
 * entity tag, or 304 with no body when the client already has this version.
 * `etag` is passed when the caller has it cached. A body in ready chunks
 * (`/rest/all`) is written in one go (the socket gathers them) rather than
 * joined first.
 */
export function sendRead(
  req: IncomingMessage,
  res: ServerResponse,
  body: string | Buffer | readonly Buffer[],
  etag = etagOf(body),
  kind: 'json' | 'text' = 'json',
): void {
  if (notModified(req, etag)) {
    res.writeHead(304, { ...headersOf(res).empty, ETag: etag });
    res.end();
    return;
  }
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    res.writeHead(200, withEtag(headersOf(res), kind, Buffer.byteLength(body), etag) as string[]);
    res.end(body);
    return;
  }
  let length = 0;
  for (const chunk of body) length += chunk.length;
  res.writeHead(200, withEtag(headersOf(res), kind, length, etag) as string[]);
  res.cork();
  for (let i = 0; i < body.length - 1; i++) res.write(body[i]);
  res.end(body[body.length - 1]);
  res.uncork();
}

export function sendNoContent(res: ServerResponse): void {
  res.writeHead(204, headersOf(res).empty);
  res.end();
}

const CLOSE_CONNECTION = { Connection: 'close' };

/** EVOK's error envelope. */
export function errorBody(kind: string, message: string): string {
  return JSON.stringify({ success: false, errors: { [kind]: message } });
}

export function sendError(res: ServerResponse, error: unknown, extraHeaders?: Record<string, string>): void {
  const { status, kind, message } =
    error instanceof RequestError
      ? error
      : { status: 500, kind: 'InternalError', message: error instanceof Error ? error.message : String(error) };
  const body = errorBody(kind, message);
  // The rest of an oversized body may still be on its way; closing beats reading it.
  const connection = status === 413 ? CLOSE_CONNECTION : undefined;
  res.writeHead(status, { ...headersOf(res).json, ...extraHeaders, ...connection, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendSuccess(res: ServerResponse, result: unknown): void {
  sendSuccessJson(res, JSON.stringify(result));
}

/** The success envelope around a result that is JSON text already, such as a device's cached text. */
export function sendSuccessJson(res: ServerResponse, resultJson: string): void {
  sendJson(res, 200, `{"success":true,"result":${resultJson}}`);
}

/** Endpoints that take only POST (bulk, RPC): OPTIONS for CORS preflights, 405 otherwise. */
export function servePost(req: IncomingMessage, res: ServerResponse, serve: () => Promise<void>): void {
  switch (req.method) {
    case 'POST':
      void serve();
      return;
    case 'OPTIONS':
      sendNoContent(res);
      return;
    default:
      throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (POST, OPTIONS)`);
  }
}
