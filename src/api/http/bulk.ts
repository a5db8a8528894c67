import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Device, DeviceType } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';
import { RawJson, jsonText } from '../../text/json-text.js';
import type { Registry } from '../../registry/registry.js';
import { REST_ALL_ORDER } from '../../registry/type-names.js';
import { writeDevice } from '../../registry/write.js';
import { clientGone } from './client-gone.js';
import { parseJsonObject, readBody } from './body.js';
import type { DeviceRouteContext } from './device-routes.js';
import { authorizeAgain, requestActor } from '../access/auth.js';
import type { ApiGuards } from '../access/guards.js';
import { sendError, sendJson, servePost } from './respond.js';
import { isFieldObject } from '../set-arguments.js';
import { parseTypeNames } from './type-filter.js';

// `POST /bulk`: several queries and writes in one request. Sections run in
// EVOK's order (queries, group writes, single writes) and writes one after
// the other. Each item answers for itself: a failed item becomes EVOK's
// error envelope in its place and the others keep their results. Only a body
// that is not a bulk request at all is refused as a whole (400). As in EVOK,
// the body is read as JSON whatever its declared content type.

const SECTIONS = ['group_queries', 'group_assignments', 'individual_assignments'] as const;
type Section = (typeof SECTIONS)[number];

type Item = Record<string, unknown>;
/** Devices are their cached JSON text (EVOK's number types included). */
type ItemResult = RawJson | RawJson[] | Array<RawJson | ErrorEnvelope> | ErrorEnvelope;

interface ErrorEnvelope {
  success: false;
  errors: Record<string, string>;
}

/** Bulk requests mix reads and writes, so they check the caller's scope once the body says which. */
/** `guards`: the live holder of the authorizer (a reload replaces it), read when the body is in. */
type BulkContext = DeviceRouteContext & { guards: Pick<ApiGuards, 'auth'> };

export function handleBulk(ctx: DeviceRouteContext & Pick<ApiGuards, 'auth'>, req: IncomingMessage, res: ServerResponse): void {
  // Only what serving needs, not a copy of the whole server context: a
  // request lives until its writes are confirmed, and a copy of every field
  // per request, outliving young-generation collections, was most of what a
  // stream of these requests left in the old generation (bench: heap sampling).
  servePost(req, res, () => serve({ registry: ctx.registry, feed: ctx.feed, guards: ctx, signal: clientGone(res), actor: requestActor(req, ctx.auth, 'bulk') }, req, res));
}

async function serve(ctx: BulkContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const body = await readBody(req);
    // The token may have been revoked by a reload while the body was on its way.
    authorizeAgain(ctx.guards, req, 'read');
    const sections = readSections(parseJsonObject(body));
    // The router let any valid reader in. Refused as a whole, before anything
    // runs: half a bulk request applied is worse than none.
    if (sections.group_assignments?.length || sections.individual_assignments?.length) {
      authorizeAgain(ctx.guards, req, 'write');
    }
    const reply: Partial<Record<Section, ItemResult[]>> = {};
    if (sections.group_queries) {
      reply.group_queries = sections.group_queries.map((item) => settle(() => select(ctx.registry, item, 'device_types').map(read)));
    }
    if (sections.group_assignments) {
      reply.group_assignments = [];
      for (const item of sections.group_assignments) reply.group_assignments.push(await settleAsync(() => assignGroup(ctx, item)));
    }
    if (sections.individual_assignments) {
      reply.individual_assignments = [];
      for (const item of sections.individual_assignments) {
        reply.individual_assignments.push(await settleAsync(() => assignOne(ctx, item)));
      }
    }
    sendJson(res, 200, jsonText(reply));
  } catch (error) {
    sendError(res, error);
  }
}

function readSections(body: Record<string, unknown>): Partial<Record<Section, Item[]>> {
  const sections: Partial<Record<Section, Item[]>> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!(SECTIONS as readonly string[]).includes(key)) {
      throw new RequestError(400, 'KeyError', `unknown bulk section '${key}' (${SECTIONS.join(', ')})`);
    }
    if (!Array.isArray(value) || !value.every(isFieldObject)) {
      throw new RequestError(400, 'TypeError', `'${key}' must be a list of objects`);
    }
    sections[key as Section] = value;
  }
  return sections;
}

function envelope(error: unknown): ErrorEnvelope {
  if (error instanceof RequestError) return { success: false, errors: { [error.kind]: error.message } };
  return { success: false, errors: { InternalError: error instanceof Error ? error.message : String(error) } };
}

function settle(run: () => ItemResult): ItemResult {
  try {
    return run();
  } catch (error) {
    return envelope(error);
  }
}

async function settleAsync(run: () => Promise<ItemResult>): Promise<ItemResult> {
  try {
    return await run();
  } catch (error) {
    return envelope(error);
  }
}

function read(device: Device): RawJson {
  return new RawJson(device.json());
}

/**
 * Devices matching every filter the item gives: types (canonical or
 * alternate names), circuits (or aliases), `group` (the board: circuits named
 * `<group>_…`, as EVOK 2 numbered them) and `global_device_id` (`glob_dev_id`).
 */
function select(registry: Registry, item: Item, typesKey: 'device_types' | 'device_type'): Device[] {
  const types = selectedTypes(item, typesKey);
  const circuits = optionalStrings(item, 'device_circuits');
  const group = item['group'];
  if (group !== undefined && typeof group !== 'number' && typeof group !== 'string') {
    throw new RequestError(400, 'TypeError', "'group' must be a number or a string");
  }
  const globalId = item['global_device_id'];
  if (globalId !== undefined && typeof globalId !== 'number') throw new RequestError(400, 'TypeError', "'global_device_id' must be a number");
  const wanted = circuits && new Set(circuits.map((name) => registry.byAlias(name)?.circuit ?? name));
  const matches: Device[] = [];
  for (const type of types) {
    for (const device of registry.list(type)) {
      if (wanted && !wanted.has(device.circuit)) continue;
      if (group !== undefined && device.circuit !== String(group) && !device.circuit.startsWith(`${group}_`)) continue;
      if (globalId !== undefined && device.full()['glob_dev_id'] !== globalId) continue;
      matches.push(device);
    }
  }
  return matches;
}

function selectedTypes(item: Item, key: 'device_types' | 'device_type'): readonly DeviceType[] {
  const given = item[key];
  if (given === undefined) return REST_ALL_ORDER;
  const names = key === 'device_type' && typeof given === 'string' ? [given] : given;
  if (!Array.isArray(names)) throw new RequestError(400, 'TypeError', `'${key}' must be ${key === 'device_type' ? 'a type name' : 'a list of type names'}`);
  const { types, unknown } = parseTypeNames(names);
  if (unknown.length > 0) throw new RequestError(404, 'KeyError', unknown.map((name) => `'${name}'`).join(', '));
  return REST_ALL_ORDER.filter((type) => types.has(type));
}

function optionalStrings(item: Item, key: string): string[] | undefined {
  const value = item[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) {
    throw new RequestError(400, 'TypeError', `'${key}' must be a list of strings`);
  }
  return value;
}

function assignedValues(item: Item): Record<string, unknown> {
  const values = item['assigned_values'];
  if (!isFieldObject(values)) throw new RequestError(400, 'TypeError', "'assigned_values' must be an object of fields");
  return values;
}

/**
 * EVOK names the type `device_type` here; `device_types` (a list) works too.
 * One of them is required, so a forgotten filter cannot write every device.
 */
async function assignGroup(ctx: DeviceRouteContext, item: Item): Promise<ItemResult> {
  const values = assignedValues(item);
  const typesKey = item['device_type'] !== undefined ? 'device_type' : 'device_types';
  if (item[typesKey] === undefined) throw new RequestError(400, 'KeyError', "a group assignment needs 'device_type'");
  const devices = select(ctx.registry, item, typesKey);
  const results: Array<RawJson | ErrorEnvelope> = [];
  for (const device of devices) {
    try {
      await writeDevice(ctx.registry, ctx.feed, device, values, ctx.signal, ctx.actor);
      results.push(read(device));
    } catch (error) {
      results.push(envelope(error));
    }
  }
  return results;
}

async function assignOne(ctx: DeviceRouteContext, item: Item): Promise<ItemResult> {
  const { device_type: type, device_circuit: circuit } = item;
  if (typeof type !== 'string') throw new RequestError(400, 'TypeError', "'device_type' must be a type name");
  if (typeof circuit !== 'string') throw new RequestError(400, 'TypeError', "'device_circuit' must be a circuit or alias");
  const values = assignedValues(item);
  const device = ctx.registry.resolve(type, circuit);
  await writeDevice(ctx.registry, ctx.feed, device, values, ctx.signal, ctx.actor);
  return read(device);
}
