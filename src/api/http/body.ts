import type { IncomingMessage } from 'node:http';
import { RequestError } from '../../registry/request-error.js';

// Request bodies: bounded in size, parsed by content type into the plain
// parameter objects the write path takes.

export const MAX_BODY_BYTES = 64 * 1024;

export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    req.resume();
    return Promise.reject(new RequestError(413, 'PayloadTooLarge', `request body over ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Not destroyed: the client should still get its 413. The reply
        // closes the connection, which ends the upload (see sendError).
        req.pause();
        req.removeAllListeners('data');
        chunks.length = 0;
        reject(new RequestError(413, 'PayloadTooLarge', `request body over ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Form fields of a `/rest` write; each key takes its first value, as EVOK does. */
export function parseFormBody(req: IncomingMessage, body: Buffer): Record<string, unknown> {
  const type = mediaType(req);
  if (type === 'application/json') return parseJsonObject(body);
  if (type !== '' && type !== 'application/x-www-form-urlencoded') {
    throw new RequestError(415, 'UnsupportedMediaType', `content type '${type}' is not supported here; send application/x-www-form-urlencoded`);
  }
  const params: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(body.toString('utf8'))) {
    if (!Object.hasOwn(params, key)) params[key] = value;
  }
  return params;
}

/** JSON object of a `/json` write, bulk request, etc. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  const value = parseJson(body);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RequestError(400, 'TypeError', 'request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** No EVOK request nests deeper than 4; the bound keeps every later walk over the value shallow. */
export const MAX_JSON_DEPTH = 32;

export function parseJson(body: Buffer): unknown {
  const text = body.toString('utf8');
  const depth = nestingDepth(text);
  if (depth > MAX_JSON_DEPTH) {
    throw new RequestError(400, 'JSONDecodeError', `JSON nested ${depth} levels deep; at most ${MAX_JSON_DEPTH} are accepted`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RequestError(400, 'JSONDecodeError', (error as Error).message);
  }
}

/**
 * Deepest bracket nesting outside strings, counted before parsing so a deep
 * value is refused without ever being built. Malformed text is left for
 * JSON.parse to describe.
 */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}
