import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestError } from '../../registry/request-error.js';
import { jsonText } from '../../text/json-text.js';
import { readBody } from '../http/body.js';
import { clientGone } from '../http/client-gone.js';
import type { DeviceRouteContext } from '../http/device-routes.js';
import { authorizeAgain, requestActor } from '../access/auth.js';
import type { ApiGuards } from '../access/guards.js';
import { sendError, sendJson, sendNoContent, servePost } from '../http/respond.js';
import { RPC_METHODS, type RpcMethod } from './methods.js';
import { isFieldObject } from '../set-arguments.js';

// `POST /rpc`: JSON-RPC 2.0 (and 1.0 requests, answered in 1.0 shape).
// Batches run in order; notifications run but are not answered, and a
// request that leaves nothing to answer gets 204 No Content.

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

type Id = string | number | null;
type Version = '1.0' | '2.0';
type Response = Record<string, unknown>;

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, string>,
  ) {
    super(message);
  }
}

/** RPC batches mix getters and setters, so the caller's scope is checked once the methods are known. */
/** `guards`: the live holder of the authorizer (a reload replaces it), read when the body is in. */
type RpcContext = DeviceRouteContext & { guards: Pick<ApiGuards, 'auth'> };

export function handleRpc(ctx: DeviceRouteContext & Pick<ApiGuards, 'auth'>, req: IncomingMessage, res: ServerResponse): void {
  // Only what serving needs, not a copy of the whole server context: a
  // request lives until its writes are confirmed, and a copy of every field
  // per request, outliving young-generation collections, was most of what a
  // stream of these requests left in the old generation (bench: heap sampling).
  servePost(req, res, () => serve({ registry: ctx.registry, feed: ctx.feed, guards: ctx, signal: clientGone(res), actor: requestActor(req, ctx.auth, 'rpc') }, req, res));
}

async function serve(ctx: RpcContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: Buffer;
  try {
    body = await readBody(req);
    // The token may have been revoked by a reload while the body was on its way.
    authorizeAgain(ctx.guards, req, 'read');
  } catch (error) {
    sendError(res, error);
    return;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (error) {
    sendJson(res, 200, JSON.stringify(failure('2.0', null, new RpcError(PARSE_ERROR, `Parse error: ${(error as Error).message}`))));
    return;
  }
  // Refused as a whole, before anything runs, like a bulk request: no half-applied batches.
  const { auth } = ctx.guards;
  const refused = auth.enabled && needsWrite(parsed) ? auth.authorize(req, 'write') : undefined;
  if (refused) {
    sendError(res, refused);
    return;
  }
  if (!Array.isArray(parsed)) {
    const response = await call(ctx, parsed);
    if (response) sendJson(res, 200, jsonText(response));
    else sendNoContent(res);
    return;
  }
  if (parsed.length === 0) {
    sendJson(res, 200, JSON.stringify(failure('2.0', null, new RpcError(INVALID_REQUEST, 'Invalid Request: empty batch'))));
    return;
  }
  const responses: Response[] = [];
  for (const request of parsed) {
    const response = await call(ctx, request);
    if (response) responses.push(response);
  }
  if (responses.length > 0) sendJson(res, 200, jsonText(responses));
  else sendNoContent(res);
}

/** Whether any call of a request or batch names a method that changes something (unknown methods change nothing). */
function needsWrite(parsed: unknown): boolean {
  const requests = Array.isArray(parsed) ? parsed : [parsed];
  return requests.some((request) => {
    const name = isFieldObject(request) ? request['method'] : undefined;
    return typeof name === 'string' && RPC_METHODS.get(name)?.readOnly !== true;
  });
}

/** One request of a call or batch; undefined when it was a notification. */
async function call(ctx: DeviceRouteContext, request: unknown): Promise<Response | undefined> {
  if (!isFieldObject(request)) return failure('2.0', null, new RpcError(INVALID_REQUEST, 'Invalid Request: not an object'));
  const version: Version | undefined = request['jsonrpc'] === '2.0' ? '2.0' : request['jsonrpc'] === undefined ? '1.0' : undefined;
  const id = request['id'];
  const validId = id === undefined || id === null || typeof id === 'string' || typeof id === 'number';
  if (version === undefined || !validId) {
    return failure('2.0', validId ? (id ?? null) : null, new RpcError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0" and "id" a string, number or null'));
  }
  // 2.0 marks a notification by leaving out the id, 1.0 by a null id.
  const notification = version === '2.0' ? id === undefined : id === undefined || id === null;
  const replyId: Id = id ?? null;
  try {
    const { method: name, params } = request;
    if (typeof name !== 'string') throw new RpcError(INVALID_REQUEST, 'Invalid Request: "method" must be a string');
    if (params !== undefined && !Array.isArray(params) && !isFieldObject(params)) {
      throw new RpcError(INVALID_REQUEST, 'Invalid Request: "params" must be a list or an object');
    }
    const method = RPC_METHODS.get(name);
    if (!method) throw new RpcError(METHOD_NOT_FOUND, `Method not found: Method '${name}' not found!`);
    const result = await method.run(ctx, positional(method, params ?? []));
    return notification ? undefined : success(version, replyId, result ?? null);
  } catch (error) {
    return notification ? undefined : failure(version, replyId, asRpcError(error));
  }
}

function positional(method: RpcMethod, params: unknown[] | Record<string, unknown>): unknown[] {
  let args: unknown[];
  if (Array.isArray(params)) {
    args = params;
  } else {
    const extra = Object.keys(params).filter((key) => !method.params.includes(key));
    if (extra.length > 0 && !method.extraNamedAreFields) {
      throw new RpcError(INVALID_PARAMS, `Invalid params: unexpected ${extra.join(', ')} (parameters: ${method.params.join(', ')})`);
    }
    args = method.params.map((name) => params[name]);
    if (extra.length > 0) {
      const last = method.params[method.params.length - 1]!;
      const fields: Record<string, unknown> = params[last] === undefined ? {} : { [last]: params[last] };
      for (const key of extra) fields[key] = params[key];
      args[args.length - 1] = fields;
    }
    while (args.length > 0 && args[args.length - 1] === undefined) args.pop();
  }
  if (args.length < method.required || args.length > method.params.length) {
    throw new RpcError(INVALID_PARAMS, `Invalid params: expected (${method.params.join(', ')}), ${method.required} required`);
  }
  return args;
}

/** Anything the client got wrong (bad circuit, bad value) is -32602; bus failures are -32603. */
function asRpcError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  if (error instanceof RequestError) {
    const data = { [error.kind]: error.message };
    return error.status < 500
      ? new RpcError(INVALID_PARAMS, `Invalid params: ${error.message}`, data)
      : new RpcError(INTERNAL_ERROR, `Internal error: ${error.message}`, data);
  }
  return new RpcError(INTERNAL_ERROR, `Internal error: ${error instanceof Error ? error.message : String(error)}`);
}

function success(version: Version, id: Id, result: unknown): Response {
  return version === '2.0' ? { jsonrpc: '2.0', id, result } : { id, result, error: null };
}

function failure(version: Version, id: Id, error: RpcError): Response {
  const body = error.data ? { code: error.code, message: error.message, data: error.data } : { code: error.code, message: error.message };
  return version === '2.0' ? { jsonrpc: '2.0', id, error: body } : { id, result: null, error: body };
}
