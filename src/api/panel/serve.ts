import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestError } from '../../errors.js';

// Serves the built-in control panel: one HTML page with its script and
// stylesheet inlined at build time (build.mjs), held in memory. Its headers
// are the panel's own; the API keeps EVOK's.

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

export interface ServedPanel {
  headers: Record<string, string | number>;
  body: Buffer;
}

export function preparePanel(page: PanelPage): ServedPanel {
  const body = Buffer.from(page.html, 'utf8');
  return {
    body,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': body.length,
      'Content-Security-Policy': page.csp,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      // The page is static but changes with each build; revalidating costs little.
      'Cache-Control': 'no-cache',
    },
  };
}

export function sendPanel(panel: ServedPanel, req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET)`);
  }
  res.writeHead(200, panel.headers);
  res.end(req.method === 'HEAD' ? undefined : panel.body);
}
