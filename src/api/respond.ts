import type { ServerResponse } from 'node:http';
import { RequestError } from '../errors.js';

// Writing replies. Bodies arrive as ready bytes or strings, so the hot path is
// a header object reused across requests and one write.

export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'x-requested-with, content-type, authorization',
  'Access-Control-Allow-Methods': 'POST, GET, OPTIONS',
};

const JSON_HEADERS = { 'Content-Type': 'application/json', ...CORS_HEADERS };

export function sendJson(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendText(res: ServerResponse, status: number, body: string, cors = true): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=UTF-8',
    'Content-Length': Buffer.byteLength(body),
    ...(cors ? CORS_HEADERS : {}),
  });
  res.end(body);
}

export function sendNoContent(res: ServerResponse): void {
  res.writeHead(204, CORS_HEADERS);
  res.end();
}

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
  res.writeHead(status, { ...JSON_HEADERS, ...extraHeaders, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendSuccess(res: ServerResponse, result: unknown): void {
  sendSuccessJson(res, JSON.stringify(result));
}

/** The success envelope around a result that is JSON text already, such as a device's cached text. */
export function sendSuccessJson(res: ServerResponse, resultJson: string): void {
  sendJson(res, 200, `{"success":true,"result":${resultJson}}`);
}
