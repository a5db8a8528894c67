import type { IncomingMessage } from 'node:http';
import { RequestError } from '../../registry/request-error.js';

// Cross-site writes. A form POST from any web page reaches the controller
// without a CORS preflight, and browsers apply no CORS at all to WebSocket
// upgrades; the Origin header is the one thing that tells such a request from
// the controller's own panel. A request whose Origin names another site than
// its Host may only change things when that origin is listed.
//
// Requests without Origin are left alone: curl, Node-RED, Home Assistant and
// scripts send none, and a browser always sends one on a cross-site POST or
// upgrade.

const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443' };

/** Methods that only look; every other method may change state. */
export function isSafeMethod(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
}

/**
 * Whether `origin` (`scheme://name[:port]`) names the same site as the `host`
 * header (`name[:port]`). A port left out means the scheme's default on both
 * sides, so `http://plc` equals `plc:80` (nginx forwards `$host:$server_port`).
 */
export function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (sandboxed frames, file: pages) and garbage are never "this site"
  }
  const defaultPort = DEFAULT_PORTS[url.protocol];
  if (defaultPort === undefined || url.username !== '' || url.pathname !== '/') return false;
  const target = splitHost(host);
  if (target === undefined) return false;
  return url.hostname === target.name && (url.port || defaultPort) === (target.port || defaultPort);
}

/** `name[:port]` of a Host header, the name in lower case and IPv6 in brackets as URL.hostname has it. */
export function splitHost(host: string): { name: string; port: string } | undefined {
  const text = host.trim().toLowerCase();
  const colon = text.lastIndexOf(':');
  const hasPort = colon >= 0 && text.indexOf(']', colon) < 0 && (text.startsWith('[') || text.indexOf(':') === colon);
  const name = hasPort ? text.slice(0, colon) : text;
  const port = hasPort ? text.slice(colon + 1) : '';
  if (name === '' || !/^\d{0,5}$/.test(port)) return undefined;
  return { name, port: port === '' ? '' : String(Number(port)) };
}

/**
 * The 403 for a state-changing request (or WebSocket upgrade) sent by a page
 * of another site, or undefined when it may proceed.
 */
export function crossSiteRefusal(req: IncomingMessage, originListed: (origin: string) => boolean, what: string): RequestError | undefined {
  const origin = req.headers.origin;
  if (origin === undefined || sameOrigin(origin, req.headers.host) || originListed(origin)) return undefined;
  return new RequestError(403, 'Forbidden', `pages from ${origin} may not ${what} here: list the origin in apis.auth.cors_origins to allow it`);
}
