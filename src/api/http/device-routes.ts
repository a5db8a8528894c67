import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestError } from '../../errors.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { writeDevice } from '../../registry/write.js';
import { checkJsonContentType, parseFormBody, parseJsonObject, readBody } from './body.js';
import { sendError, sendJson, sendJsonChunks, sendNoContent, sendSuccessJson } from './respond.js';

// `/rest/...` (form bodies) and `/json/...` (JSON bodies): the same devices,
// the same replies; only the body format of writes differs.

export interface DeviceRouteContext {
  registry: Registry;
  feed: ChangeFeed;
}

export type BodyFormat = 'form' | 'json';

/** `segments` are the decoded path parts after `/rest` or `/json`. */
export function handleDeviceRoute(
  ctx: DeviceRouteContext,
  format: BodyFormat,
  segments: string[],
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const [type, circuit, property] = segments;
  if (type === undefined || segments.length > 3 || (circuit === undefined && type !== 'all')) {
    throw new RequestError(404, 'NotFound', `no such resource: ${req.url}`);
  }
  switch (req.method) {
    case 'GET':
      read(ctx.registry, type, circuit, property, res);
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
      throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, POST, OPTIONS)`);
  }
}

function read(registry: Registry, type: string, circuit: string | undefined, property: string | undefined, res: ServerResponse): void {
  if (circuit === undefined) {
    sendJsonChunks(res, 200, registry.allJson());
    return;
  }
  if (circuit === 'all') {
    const devices = registry.list(type);
    const items = property === undefined
      ? devices.map((device) => device.json())
      : devices.map((device) => JSON.stringify({ circuit: device.circuit, [property]: fieldOf(device.full(), property) }));
    sendJson(res, 200, `[${items.join(',')}]`);
    return;
  }
  const device = registry.resolve(type, circuit);
  const problem = device.unavailable();
  if (problem) throw new RequestError(503, 'ModbusSlaveOffline', problem);
  if (property === undefined) {
    sendJson(res, 200, device.json());
    return;
  }
  sendJson(res, 200, JSON.stringify({ [property]: fieldOf(device.full(), property) }));
}

function fieldOf(state: Readonly<Record<string, unknown>>, property: string): unknown {
  if (!Object.hasOwn(state, property)) throw new RequestError(404, 'Exception', `Invalid property name '${property}'`);
  return state[property];
}

async function write(
  ctx: DeviceRouteContext,
  format: BodyFormat,
  type: string,
  circuit: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    if (format === 'json') checkJsonContentType(req);
    const body = await readBody(req);
    const device = ctx.registry.resolve(type, circuit);
    const params = format === 'json' ? parseJsonObject(body) : parseFormBody(req, body);
    await writeDevice(ctx.registry, ctx.feed, device, params);
    // The confirmed state's JSON text was just made for the next GET; reuse it
    // rather than serialising the same state again.
    sendSuccessJson(res, device.json());
  } catch (error) {
    sendError(res, error);
  }
}
