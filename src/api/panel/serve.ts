import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { RequestError } from '../../registry/request-error.js';

// Serves the built-in control panel: one HTML page with its script and
// stylesheet inlined at build time (build.mjs), held in memory, compressed
// once at start-up (brotli and gzip) and sent in the best encoding the
// browser accepts, with an ETag per encoding. Its headers are the panel's own;
// the API keeps EVOK's.

export interface PanelPage {
  html: string;
  /** Content-Security-Policy naming the inline script and style by hash. */
  csp: string;
}

/** Put in place by build.mjs; absent when the sources run unbundled. */
declare const IOGATE_PANEL_HTML: string | undefined;
declare const IOGATE_PANEL_CSP: string | undefined;

/** The panel built into this bundle, or undefined (running from source). */
export function builtinPanel(): PanelPage | undefined {
  if (typeof IOGATE_PANEL_HTML === 'undefined' || typeof IOGATE_PANEL_CSP === 'undefined') return undefined;
  return { html: IOGATE_PANEL_HTML, csp: IOGATE_PANEL_CSP };
}

type Encoding = 'br' | 'gzip' | 'identity';

interface EncodedPage {
  body: Buffer;
  etag: string;
}

export interface ServedPanel {
  headers: Record<string, string>;
  encodings: Record<Encoding, EncodedPage>;
}

export function preparePanel(page: PanelPage): ServedPanel {
  const plain = Buffer.from(page.html, 'utf8');
  const tag = createHash('sha1').update(plain).digest('hex').slice(0, 20);
  const encoded = (body: Buffer, suffix: string): EncodedPage => ({ body, etag: `"${tag}${suffix}"` });
  return {
    encodings: {
      br: encoded(brotliCompressSync(plain, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: plain.length } }), '-br'),
      gzip: encoded(gzipSync(plain, { level: 9 }), '-gz'),
      identity: encoded(plain, ''),
    },
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': page.csp,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      // The page is static but changes with each build; revalidating costs a 304.
      'Cache-Control': 'no-cache',
      Vary: 'Accept-Encoding',
    },
  };
}

export function sendPanel(panel: ServedPanel, req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET)`);
  }
  const encoding = chooseEncoding(req.headers['accept-encoding']);
  const { body, etag } = panel.encodings[encoding];
  const headers: Record<string, string | number> = { ...panel.headers, ETag: etag };
  if (encoding !== 'identity') headers['Content-Encoding'] = encoding;
  if (matches(req.headers['if-none-match'], etag)) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  headers['Content-Length'] = body.length;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** Brotli where accepted, else gzip, else none; `q=0` refuses an encoding. */
export function chooseEncoding(header: string | string[] | undefined): Encoding {
  const accepted = new Map<string, number>();
  for (const part of String(header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((param) => /^\s*q=([\d.]+)\s*$/.exec(param)?.[1]).find((value) => value !== undefined);
    accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const weight = (name: string) => accepted.get(name) ?? (accepted.has('*') ? accepted.get('*')! : 0);
  if (weight('br') > 0) return 'br';
  if (weight('gzip') > 0) return 'gzip';
  return 'identity';
}

function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed === etag || trimmed === `W/${etag}`;
  });
}
