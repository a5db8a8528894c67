import type { Device, DeviceType } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';
import { OneWireBusDevice } from '../../onewire/owbus-device.js';
import { RawJson } from '../../text/json-text.js';
import { CANONICAL_TYPES } from '../../registry/type-names.js';
import { writeDevice } from '../../registry/write.js';
import type { DeviceRouteContext } from '../http/device-routes.js';
import { fieldsFromValue } from '../set-arguments.js';

// The JSON-RPC methods: an explicit table, nothing else is callable (EVOK
// dispatched to any attribute of its request handler). Two families:
//  - for every device type T: `T_get(circuit)` → the device object,
//    `T_get_value(circuit)` → its `value`, `T_set(circuit, value)` → writes
//    and returns the confirmed device object;
//  - EVOK v3's own names, with EVOK's return shapes, working where EVOK's were
//    broken (`input_set`, `sensor_set`, `owbus_set`, `owbus_scan`) or wrong
//    (`relay_set`/`output_set` switched ON for the string "0").
// Where both families have the name, EVOK's wins: `sensor_get` and
// `owbus_get` keep EVOK's answers. EVOK's `ai_set_*` family always failed
// and has no meaning on v3 boards, so it does not exist here.

export interface RpcMethod {
  /** Parameter names, for calls with named parameters. */
  params: readonly string[];
  /** How many leading parameters must be given. */
  required: number;
  /**
   * Named-parameter calls may carry further keys: they become the fields of
   * the last parameter (`{"circuit": "1_01", "debounce": 10}` to `di_set`).
   */
  extraNamedAreFields?: boolean;
  /** Only reads: callers with a read-scope token may use it. Everything else needs write scope. */
  readOnly?: true;
  run(ctx: DeviceRouteContext, args: unknown[]): unknown;
}

function invalid(message: string): RequestError {
  return new RequestError(400, 'InvalidParams', message);
}

function device(ctx: DeviceRouteContext, type: DeviceType, circuit: unknown): Device {
  if (typeof circuit !== 'string') throw invalid(`circuit must be a string, got ${JSON.stringify(circuit)}`);
  return ctx.registry.resolve(type, circuit);
}

function readable(ctx: DeviceRouteContext, type: DeviceType, circuit: unknown): Device {
  const found = device(ctx, type, circuit);
  const problem = found.unavailable();
  if (problem) throw new RequestError(503, 'ModbusSlaveOffline', problem);
  return found;
}

// Results are the devices' JSON texts, so floats stay floats (`"result": 5.0`).

function whole(found: Device): RawJson {
  return new RawJson(found.json());
}

function field(found: Device, name: string): RawJson {
  if (!Object.hasOwn(found.full(), name)) throw invalid(`${found.type} devices have no '${name}'`);
  return new RawJson(found.fieldJson(name));
}

/** Writes and answers the confirmed device. */
async function write(ctx: DeviceRouteContext, type: DeviceType, circuit: unknown, fields: Record<string, unknown>): Promise<Device> {
  const target = device(ctx, type, circuit);
  await writeDevice(ctx.registry, ctx.feed, target, fields, ctx.signal, ctx.actor);
  return target;
}

/** Read methods: one circuit in, something of its state out. */
function getter(type: DeviceType, pick: (found: Device) => unknown): RpcMethod {
  return { params: ['circuit'], required: 1, readOnly: true, run: (ctx, [circuit]) => pick(readable(ctx, type, circuit)) };
}

function fieldsGetter(type: DeviceType, names: readonly string[]): RpcMethod {
  return getter(type, (found) => names.map((name) => field(found, name)));
}

function genericSet(type: DeviceType): RpcMethod {
  return {
    params: ['circuit', 'value'],
    required: 2,
    extraNamedAreFields: true,
    run: async (ctx, [circuit, value]) => whole(await write(ctx, type, circuit, fieldsFromValue(type, value))),
  };
}

/** EVOK's `relay_set`, `output_set`, `ao_set_value`: write `value`, answer the confirmed value (`ao`: a float). */
function valueSetter(type: DeviceType): RpcMethod {
  return {
    params: ['circuit', 'value'],
    required: 2,
    run: async (ctx, [circuit, value]) => field(await write(ctx, type, circuit, { value }), 'value'),
  };
}

function buildTable(): Map<string, RpcMethod> {
  const table = new Map<string, RpcMethod>();
  for (const type of CANONICAL_TYPES) {
    table.set(`${type}_get`, getter(type, whole));
    table.set(`${type}_get_value`, getter(type, (found) => field(found, 'value')));
    table.set(`${type}_set`, genericSet(type));
  }
  const evok: Record<string, RpcMethod> = {
    input_get: fieldsGetter('di', ['value', 'debounce']),
    input_get_value: getter('di', (found) => field(found, 'value')),
    input_set: { params: ['circuit', 'debounce'], required: 2, run: async (ctx, [circuit, debounce]) => whole(await write(ctx, 'di', circuit, { debounce })) },
    relay_get: getter('ro', (found) => field(found, 'value')),
    relay_set: valueSetter('ro'),
    output_get: fieldsGetter('do', ['value', 'pending']),
    output_set: valueSetter('do'),
    output_set_for_time: {
      params: ['circuit', 'value', 'timeout'],
      required: 3,
      run: async (ctx, [circuit, value, timeout]) => whole(await write(ctx, 'do', circuit, { value, timeout })),
    },
    ao_set_value: valueSetter('ao'),
    // EVOK passes the third parameter on as the output's mode.
    ao_set: {
      params: ['circuit', 'value', 'mode'],
      required: 2,
      run: async (ctx, [circuit, value, mode]) => whole(await write(ctx, 'ao', circuit, mode === undefined ? { value } : { value, mode })),
    },
    sensor_get: fieldsGetter('sensor', ['value', 'lost', 'time', 'interval']),
    sensor_get_value: getter('sensor', (found) => field(found, 'value')),
    owbus_get: getter('owbus', (found) => field(found, 'scan_interval')),
    owbus_scan: { params: ['circuit'], required: 1, run: async (ctx, [circuit]) => whole(await write(ctx, 'owbus', circuit, { do_scan: true })) },
    owbus_list: {
      params: ['circuit'],
      required: 1,
      readOnly: true,
      run: (ctx, [circuit]) => {
        const bus = device(ctx, 'owbus', circuit);
        return bus instanceof OneWireBusDevice ? bus.list() : {};
      },
    },
  };
  for (const [name, method] of Object.entries(evok)) table.set(name, method);
  return table;
}

export const RPC_METHODS: ReadonlyMap<string, RpcMethod> = buildTable();
