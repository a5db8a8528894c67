import type { Device, DeviceState, DeviceType } from '../../devices/device.js';
import { RequestError } from '../../errors.js';
import { OneWireBusDevice } from '../../onewire/owbus-device.js';
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

function state(ctx: DeviceRouteContext, type: DeviceType, circuit: unknown): DeviceState {
  const found = device(ctx, type, circuit);
  const problem = found.unavailable();
  if (problem) throw new RequestError(503, 'ModbusSlaveOffline', problem);
  return found.full();
}

function field(fields: DeviceState, name: string, type: DeviceType): unknown {
  if (!Object.hasOwn(fields, name)) throw invalid(`${type} devices have no '${name}'`);
  return fields[name];
}

function write(ctx: DeviceRouteContext, type: DeviceType, circuit: unknown, fields: Record<string, unknown>): Promise<DeviceState> {
  return writeDevice(ctx.registry, ctx.feed, device(ctx, type, circuit), fields, ctx.signal);
}

/** Read methods: one circuit in, something of its state out. */
function getter(type: DeviceType, pick: (fields: DeviceState) => unknown): RpcMethod {
  return { params: ['circuit'], required: 1, readOnly: true, run: (ctx, [circuit]) => pick(state(ctx, type, circuit)) };
}

function fieldsGetter(type: DeviceType, names: readonly string[]): RpcMethod {
  return getter(type, (fields) => names.map((name) => field(fields, name, type)));
}

function genericSet(type: DeviceType): RpcMethod {
  return {
    params: ['circuit', 'value'],
    required: 2,
    extraNamedAreFields: true,
    run: (ctx, [circuit, value]) => write(ctx, type, circuit, fieldsFromValue(type, value)),
  };
}

/** EVOK's `relay_set`, `output_set`, `ao_set_value`: write `value`, answer the confirmed value. */
function valueSetter(type: DeviceType): RpcMethod {
  return {
    params: ['circuit', 'value'],
    required: 2,
    run: async (ctx, [circuit, value]) => (await write(ctx, type, circuit, { value }))['value'],
  };
}

function buildTable(): Map<string, RpcMethod> {
  const table = new Map<string, RpcMethod>();
  for (const type of CANONICAL_TYPES) {
    table.set(`${type}_get`, getter(type, (fields) => fields));
    table.set(`${type}_get_value`, getter(type, (fields) => field(fields, 'value', type)));
    table.set(`${type}_set`, genericSet(type));
  }
  const evok: Record<string, RpcMethod> = {
    input_get: fieldsGetter('di', ['value', 'debounce']),
    input_get_value: getter('di', (fields) => field(fields, 'value', 'di')),
    input_set: { params: ['circuit', 'debounce'], required: 2, run: (ctx, [circuit, debounce]) => write(ctx, 'di', circuit, { debounce }) },
    relay_get: getter('ro', (fields) => field(fields, 'value', 'ro')),
    relay_set: valueSetter('ro'),
    output_get: fieldsGetter('do', ['value', 'pending']),
    output_set: valueSetter('do'),
    output_set_for_time: {
      params: ['circuit', 'value', 'timeout'],
      required: 3,
      run: (ctx, [circuit, value, timeout]) => write(ctx, 'do', circuit, { value, timeout }),
    },
    ao_set_value: valueSetter('ao'),
    // EVOK passes the third parameter on as the output's mode.
    ao_set: {
      params: ['circuit', 'value', 'mode'],
      required: 2,
      run: (ctx, [circuit, value, mode]) => write(ctx, 'ao', circuit, mode === undefined ? { value } : { value, mode }),
    },
    sensor_get: fieldsGetter('sensor', ['value', 'lost', 'time', 'interval']),
    sensor_get_value: getter('sensor', (fields) => field(fields, 'value', 'sensor')),
    owbus_get: getter('owbus', (fields) => field(fields, 'scan_interval', 'owbus')),
    owbus_scan: { params: ['circuit'], required: 1, run: (ctx, [circuit]) => write(ctx, 'owbus', circuit, { do_scan: true }) },
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
