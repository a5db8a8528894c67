import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Device } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { OBJECTLESS_TYPES, RELAY_SCHEMA_FIELDS, hasEvokSchema } from '../../registry/type-names.js';
import { writeDevice } from '../../registry/write.js';
import type { ClientSignal } from '../../modbus/request-context.js';
import { authorizeAgain, requestActor, type Authorizer } from '../access/auth.js';
import type { Actor } from '../../registry/audit-trail.js';
import { clientGone } from './client-gone.js';
import { parseFormBody, parseJsonObject, readBody } from './body.js';
import { bufferEtag, deviceReply } from './etag.js';
import { sendError, sendJson, sendNoContent, sendRead, sendSuccessJson } from './respond.js';

// `/rest/...` (form bodies) and `/json/...` (JSON bodies): the same devices,
// the same replies; only the body format of writes differs.

export interface DeviceRouteContext {
  registry: Registry;
  feed: ChangeFeed;
  /** Aborted when the client of the request being served has gone (bulk, RPC). */
  signal?: ClientSignal;
  /** Who the request being served is, for the audit log (bulk, RPC). */
  actor?: Actor;
}

export type BodyFormat = 'form' | 'json';

/** `segments` are the decoded path parts, `rest` or `json` first (not sliced off: one array fewer per request). */
/** `auth`: the live authorizer (a reload replaces it in the context): a write is authorized again once its body is in. */
export function handleDeviceRoute(
  ctx: DeviceRouteContext & { auth?: Authorizer },
  format: BodyFormat,
  segments: readonly string[],
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const [, type, circuit, property] = segments;
  if (type === undefined || segments.length > 4 || (circuit === undefined && type !== 'all')) {
    throw new RequestError(404, 'NotFound', `no such resource: ${req.url}`);
  }
  switch (req.method) {
    case 'GET':
    case 'HEAD':
      read(ctx.registry, type, circuit, property, req, res);
      return;
    case 'POST':
      if (type === 'all' && circuit === undefined) {
        sendJson(res, 200, '');
        return;
      }
      void write(ctx, format, type, circuit!, req, res);
      return;
    case 'OPTIONS':
      sendNoContent(res);
      return;
    default:
      throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD, POST, OPTIONS)`);
  }
}

function read(
  registry: Registry,
  type: string,
  circuit: string | undefined,
  property: string | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  if (OBJECTLESS_TYPES.has(type)) {
    // The route only passes a type without a circuit for `/rest/all`.
    objectless(registry, type, circuit!, 'full');
    sendRead(req, res, '[]');
    return;
  }
  if (wantsMeta(req.url ?? '')) {
    readMeta(registry, type, circuit, property, req, res);
    return;
  }
  if (circuit === undefined) {
    const body = registry.allJson();
    sendRead(req, res, body, bufferEtag(body));
    return;
  }
  if (circuit === 'all') {
    const devices = registry.list(type);
    const items = property === undefined
      ? devices.map((device) => device.json())
      : devices.map((device) => `{"circuit":${JSON.stringify(device.circuit)},${fieldJson(device, property)}}`);
    sendRead(req, res, `[${items.join(',')}]`);
    return;
  }
  const device = registry.resolve(type, circuit);
  const problem = device.unavailable();
  if (problem) throw new RequestError(503, 'ModbusSlaveOffline', problem);
  if (property === undefined) {
    const reply = deviceReply(device, device.json());
    sendRead(req, res, reply.bytes, reply.tag);
    return;
  }
  sendRead(req, res, `{${fieldJson(device, property)}}`);
}

/**
 * The meta view (`?meta=1`): EVOK's objects with `quality`, `ts`, `age_s`
 * (and a DI's `counter_total`) appended. Ages move by themselves, so these
 * answers are made per request and carry no ETag. A device of an offline
 * slave is answered (quality `offline`) rather than refused: saying how old
 * the value is, is the point.
 */
function readMeta(registry: Registry, type: string, circuit: string | undefined, property: string | undefined, req: IncomingMessage, res: ServerResponse): void {
  const now = performance.now();
  if (circuit === undefined) {
    sendRead(req, res, `[${registry.allInOrder().map((device) => device.metaJson(now)).join(',')}]`);
    return;
  }
  if (circuit === 'all') {
    const devices = registry.list(type);
    const items = property === undefined
      ? devices.map((device) => device.metaJson(now))
      : devices.map((device) => `{"circuit":${JSON.stringify(device.circuit)},${metaFieldJson(device, property, now)}}`);
    sendRead(req, res, `[${items.join(',')}]`);
    return;
  }
  const device = registry.resolve(type, circuit);
  sendRead(req, res, property === undefined ? device.metaJson(now) : `{${metaFieldJson(device, property, now)}}`);
}

/** `?meta=1` (or true, yes, on) asks for the meta view. */
export function wantsMeta(url: string): boolean {
  const query = url.indexOf('?');
  if (query < 0) return false;
  const value = new URLSearchParams(url.slice(query + 1)).get('meta');
  return value !== null && ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}

/** `"<property>":<value>` of the device, a float where EVOK writes one. */
function fieldJson(device: Device, property: string): string {
  if (!Object.hasOwn(device.full(), property)) {
    // EVOK read any attribute of its object: a name starting with `_` was refused, any other unknown one was Python's AttributeError.
    if (property.startsWith('_')) throw new RequestError(404, 'Exception', `Invalid property name '${property}'`);
    throw new RequestError(404, 'AttributeError', `'${device.type}' object has no attribute '${property}'`);
  }
  return `${JSON.stringify(property)}:${device.fieldJson(property)}`;
}

/** A field of the meta view: EVOK's fields as fieldJson writes them, or one of the meta fields. */
function metaFieldJson(device: Device, property: string, now: number): string {
  const meta = device.metaState(now);
  if (Object.hasOwn(meta, property)) return `${JSON.stringify(property)}:${JSON.stringify(meta[property])}`;
  return fieldJson(device, property);
}

async function write(
  ctx: DeviceRouteContext & { auth?: Authorizer },
  format: BodyFormat,
  type: string,
  circuit: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    // `/json` reads its body as JSON whatever the Content-Type says, as EVOK did: `curl -d '{…}'` sends it as a form.
    const body = await readBody(req);
    authorizeAgain(ctx, req, 'write');
    if (OBJECTLESS_TYPES.has(type)) objectless(ctx.registry, type, circuit, 'set');
    const device = ctx.registry.resolve(type, circuit);
    const params = format === 'json' ? jsonParams(type, body) : parseFormBody(req, body);
    if (type === 'relay') checkRelaySchema(params);
    await writeDevice(ctx.registry, ctx.feed, device, params, clientGone(res), requestActor(req, ctx.auth, format === 'json' ? 'json' : 'rest'));
    // The confirmed state's JSON text was just made for the next GET; reuse it
    // rather than serialising the same state again.
    sendSuccessJson(res, device.json());
  } catch (error) {
    sendError(res, error);
  }
}

/**
 * A type EVOK knew whose objects have no JSON form. A bus named under
 * `tcp_bus` was found, and calling `full()` or `set()` on it failed with an
 * AttributeError; any other circuit was not defined. Returns for `all` of a
 * type with nothing in it (an empty list).
 */
function objectless(registry: Registry, type: string, circuit: string, method: 'full' | 'set'): void {
  const buses = type === 'tcp_bus' ? registry.modbusBuses : new Set<string>();
  if (circuit === 'all' && method === 'full' && buses.size === 0) return;
  if (buses.has(circuit) || (circuit === 'all' && method === 'full')) {
    throw new RequestError(404, 'AttributeError', `'${type}' object has no attribute '${method}'`);
  }
  throw new RequestError(404, 'Exception', `Circuit or alias with name '${circuit}' not defined!`);
}

/** A `/json` body that is not an object: EVOK's schema refused it where the type name had one, `set()` where not. */
function jsonParams(type: string, body: Buffer): Record<string, unknown> {
  try {
    return parseJsonObject(body);
  } catch (error) {
    if (error instanceof RequestError && error.kind === 'TypeError' && hasEvokSchema(type)) {
      throw new RequestError(400, 'ValidationError', `${body.toString('utf8').trim().slice(0, 64)} is not of type 'object'`);
    }
    throw error;
  }
}

/**
 * EVOK checked `relay` writes with the DO schema (while `ro` had none): a
 * field outside it is a ValidationError there. Fields the schema takes and a
 * relay does not (`timeout`, `pwm_duty` …) go on to the relay, which refuses
 * them as EVOK's `set()` did. `pulse_ms` is iogate's own and passes.
 */
function checkRelaySchema(params: Readonly<Record<string, unknown>>): void {
  for (const field of Object.keys(params)) {
    if (!RELAY_SCHEMA_FIELDS.has(field) && field !== 'pulse_ms') {
      throw new RequestError(400, 'ValidationError', `Additional properties are not allowed ('${field}' was unexpected)`);
    }
  }
}
