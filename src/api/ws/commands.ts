import type { Actor } from '../../registry/audit-trail.js';
import type { RawData } from 'ws';
import type { DeviceType } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { CANONICAL_TYPES } from '../../registry/type-names.js';
import { writeDevice } from '../../registry/write.js';
import { checkScope } from '../access/auth.js';
import { errorBody } from '../http/respond.js';
import { fieldsFromValue, isFieldObject } from '../set-arguments.js';
import { parseTypeNames } from '../http/type-filter.js';
import type { WsClient } from './client.js';

// The commands a WebSocket client may send. Only these four run (EVOK called
// any method of the device named by `cmd`). A failure never closes the
// connection. It is answered with EVOK's error envelope only to a client that
// asked for errors: EVOK answered nothing, and its clients read every frame as
// a list of devices, so by default only device lists (and `full`'s object) go out.

export interface WsCommandContext {
  registry: Registry;
  feed: ChangeFeed;
  /** EVOK's `all_filtered`: `all` answers only what the client's filter lets through. */
  allFiltered: boolean;
}

/** What `all` lists under `all_filtered` with the default filter (EVOK's choice; no `do`). */
const ALL_FILTERED_DEFAULT: readonly DeviceType[] = ['di', 'ro', 'ai', 'ao', 'sensor'];

/** Keys of a `set` message that are not fields to write. */
const SET_ENVELOPE = new Set(['cmd', 'dev', 'circuit', 'value']);

type Message = Record<string, unknown>;

export async function runCommand(ctx: WsCommandContext, client: WsClient, data: RawData, isBinary: boolean): Promise<void> {
  try {
    const message = parseMessage(data, isBinary);
    switch (message['cmd']) {
      case 'all':
        client.reply(allDevices(ctx, client));
        return;
      case 'filter':
        setFilter(client, message);
        return;
      case 'full':
        client.reply(fullDevice(ctx.registry, message, client.meta));
        return;
      case 'set': {
        // Reading commands need only what the upgrade already checked.
        const refused = checkScope({ scope: client.scope }, 'write');
        if (refused) throw refused;
        await setDevice(ctx, message, client.closed, client.actor);
        return;
      }
      default:
        throw new RequestError(400, 'UnknownCommand', `unknown command ${JSON.stringify(message['cmd'])} (all, filter, full, set)`);
    }
  } catch (error) {
    if (error instanceof RequestError && error.status < 500) client.noteFailure();
    if (!client.errorReplies) return;
    client.reply(
      error instanceof RequestError
        ? errorBody(error.kind, error.message)
        : errorBody('InternalError', error instanceof Error ? error.message : String(error)),
    );
  }
}

function parseMessage(data: RawData, isBinary: boolean): Message {
  if (isBinary) throw new RequestError(400, 'TypeError', 'commands are JSON text frames, not binary frames');
  const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)).toString('utf8');
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch (error) {
    throw new RequestError(400, 'JSONDecodeError', (error as Error).message);
  }
  if (!isFieldObject(message)) throw new RequestError(400, 'TypeError', 'a command is a JSON object with a "cmd" key');
  return message;
}

function allDevices({ registry, allFiltered }: WsCommandContext, client: WsClient): string | Buffer {
  const filter = client.filterTypes;
  let types: readonly DeviceType[] = CANONICAL_TYPES;
  if (allFiltered) types = filter ? CANONICAL_TYPES.filter((type) => filter.has(type)) : ALL_FILTERED_DEFAULT;
  // EVOK's view is the same for every client until something changes: made once, shared.
  if (!client.meta) return registry.listingJson(types);
  // The meta view's ages move by themselves: made per request.
  const parts: string[] = [];
  const now = performance.now();
  for (const type of types) for (const device of registry.list(type)) parts.push(device.metaJson(now));
  return `[${parts.join(',')}]`;
}

/**
 * Names are resolved to canonical types, so `relay` or `input` select what
 * `ro` or `di` do. A list naming "default" restores the default filter, alone
 * too. Unknown names are dropped as in EVOK, but the client is told.
 */
function setFilter(client: WsClient, message: Message): void {
  const names = message['devices'];
  if (!Array.isArray(names)) throw new RequestError(400, 'TypeError', '"devices" must be a list of device type names');
  if (names.includes('default')) {
    client.setFilter(undefined);
    return;
  }
  const { types, unknown } = parseTypeNames(names);
  if (unknown.length === 0) {
    client.setFilter(types);
    return;
  }
  if (types.size === 0) throw new RequestError(400, 'KeyError', `no known device type in ${unknown.join(', ')}; filter unchanged`);
  client.setFilter(types);
  throw new RequestError(400, 'KeyError', `unknown device types ignored: ${unknown.join(', ')}; filtering on the others`);
}

function target(registry: Registry, message: Message) {
  const { dev, circuit } = message;
  if (typeof dev !== 'string') throw new RequestError(400, 'TypeError', '"dev" must be a device type name');
  if (typeof circuit !== 'string') throw new RequestError(400, 'TypeError', '"circuit" must be a circuit or alias');
  return registry.resolve(dev, circuit);
}

function fullDevice(registry: Registry, message: Message, meta: boolean): string {
  const device = target(registry, message);
  // The meta view answers for an offline slave too: its quality says so.
  if (meta) return device.metaJson();
  const problem = device.unavailable();
  if (problem) throw new RequestError(503, 'ModbusSlaveOffline', problem);
  return device.json();
}

/**
 * `value` as an object names fields, any other `value` is the type's first
 * setter parameter, and without `value` the message's other keys are the
 * fields. Success is not answered: the change arrives as a normal push.
 */
async function setDevice({ registry, feed }: WsCommandContext, message: Message, signal: AbortSignal, actor: Actor): Promise<void> {
  const device = target(registry, message);
  const value = message['value'];
  let fields: Record<string, unknown>;
  if (value !== undefined && value !== null) {
    fields = fieldsFromValue(device.type, value, message);
  } else {
    fields = {};
    for (const [key, field] of Object.entries(message)) if (!SET_ENVELOPE.has(key)) fields[key] = field;
  }
  await writeDevice(registry, feed, device, fields, signal, actor);
}
