import type { Device, DeviceState } from '../devices/device.js';
import { ValidationError } from '../devices/fields.js';
import { RequestError } from './request-error.js';
import { ModbusError, type ModbusErrorKind } from '../modbus/errors.js';
import { withRequestContext, type ClientSignal } from '../modbus/request-context.js';
import type { ChangeFeed } from './feed.js';
import type { Registry } from './registry.js';
import { writeGate } from './write-gate.js';
import { audit, auditing, auditResult, UNKNOWN_ACTOR, type Actor } from './audit-trail.js';

// The single write path behind every API. It validates everything before any
// bus traffic, waits for the slave to confirm, and answers with the state the
// slave confirmed; a failed write is an error, never a success.

const STATUS_BY_KIND: Record<ModbusErrorKind, number> = {
  timeout: 504,
  unknown: 504,
  exception: 502,
  protocol: 502,
  disconnected: 503,
  offline: 503,
  expired: 503,
  cancelled: 503,
  busy: 503,
  invalid: 400,
};

/**
 * The pymodbus exception EVOK named in its error envelope for the same
 * failure; an offline slave answers writes as it answers reads.
 */
const EVOK_KIND: Record<ModbusErrorKind, string> = {
  timeout: 'ModbusIOException',
  unknown: 'ModbusIOException',
  exception: 'ModbusException',
  protocol: 'ModbusIOException',
  disconnected: 'ConnectionException',
  offline: 'ModbusSlaveOffline',
  expired: 'ModbusIOException',
  cancelled: 'ConnectionException',
  busy: 'ConnectionException',
  invalid: 'ValueError',
};

/**
 * `signal` is the client's: aborted when its HTTP request or WebSocket
 * closed, so a write still waiting for the line is dropped, never sent for
 * nobody. Every bus request the write makes runs in this context.
 * `actor` is who asked: every write, refused, failed or done, goes into the
 * audit log with it once it settled (a reference kept, no copy, no disk).
 */
export function writeDevice(
  registry: Registry,
  feed: ChangeFeed,
  device: Device,
  params: Readonly<Record<string, unknown>>,
  signal?: ClientSignal,
  actor: Actor = UNKNOWN_ACTOR,
): Promise<DeviceState> {
  const write = () => performWrite(registry, feed, device, params);
  const running = writeGate.pass(signal ? () => withRequestContext({ signal }, write) : write);
  if (!auditing()) return running;
  const target = `${device.type}/${device.circuit}`;
  running.then(
    () => audit(actor, target, params, 'ok'),
    (error: unknown) => audit(actor, target, params, auditResult(error)),
  );
  return running;
}

/**
 * The control layer on the write path (interlocks, pulses, covers). It sees
 * every write of every API, whatever the device: Sparkplug or any later API
 * passes through it by calling writeDevice, with no code of its own.
 */
export interface WriteControl {
  /**
   * Before the device validates the write: takes out and checks the fields
   * the control layer owns (`pulse_ms`), refuses what breaks a rule
   * (RequestError, ValidationError), and returns how to run the write.
   */
  admit(device: Device, params: Readonly<Record<string, unknown>>): AdmittedWrite;
}

export interface AdmittedWrite {
  /** The fields left for the device. */
  params: Readonly<Record<string, unknown>>;
  /** Runs the device's validated action under the layer's rules (locks, interlock checks, timers). */
  run(action: () => Promise<void>): Promise<void>;
}

async function performWrite(
  registry: Registry,
  feed: ChangeFeed,
  device: Device,
  params: Readonly<Record<string, unknown>>,
): Promise<DeviceState> {
  let action: () => Promise<void>;
  let admitted: AdmittedWrite | undefined;
  try {
    if (Object.keys(params).length === 0) throw new ValidationError('nothing to write: the request names no field');
    if ('alias' in params) {
      const problem = registry.aliasProblem(device, params['alias']);
      if (problem) throw new RequestError(400, 'Exception', problem);
    }
    admitted = registry.writeControl?.admit(device, params);
    action = device.prepareWrite(admitted?.params ?? params);
  } catch (error) {
    if (error instanceof ValidationError) throw new RequestError(400, error.kind, error.message);
    throw error;
  }
  if (typeof params['alias'] === 'string') registry.setAlias(device, params['alias']);
  try {
    await (admitted ? admitted.run(action) : action());
  } catch (error) {
    if (error instanceof ModbusError) throw new RequestError(STATUS_BY_KIND[error.kind], EVOK_KIND[error.kind], error.message);
    if (error instanceof ValidationError) throw new RequestError(400, error.kind, error.message);
    throw error;
  } finally {
    // The feed passes it on only to listeners that take it (EVOK pushes no registers, MQTT does).
    if (device.settle()) feed.publish([device]);
  }
  return device.full();
}
