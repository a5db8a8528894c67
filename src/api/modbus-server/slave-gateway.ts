import { coilWriteEffects, registerWriteEffects } from '../../boards/output-writes.js';
import type { OutputControl } from '../../control/output-control.js';
import { ValidationError } from '../../devices/fields.js';
import { coilWriteMoves, registerWriteMoves, type OutputMoves } from '../../devices/output-moves.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import { RequestError } from '../../registry/request-error.js';
import { ModbusError } from '../../modbus/errors.js';
import { EXCEPTION, ModbusPduError, type ModbusRequest, type ModbusResponse } from '../../modbus/pdu.js';
import { withRequestContext, type ClientSignal } from '../../modbus/request-context.js';
import { audit, auditResult } from '../../registry/audit-trail.js';
import { writeGate } from '../../registry/write-gate.js';
import type { BusShare } from './bus-share.js';
import { countWrite, type ModbusServerStats } from './stats.js';

// One configured Modbus device as the server serves it. Reads of registers
// iogate polls come from the poll cache while it is young enough; everything
// else goes to the board through iogate's own bus queue (BusShare bounds how
// much). Writes are decoded into the outputs they move with the register
// map's own decoding (output-moves.ts), and the control layer admits them as
// a whole, exactly as a `register` device's write: a write that would break
// an interlock, reverse a cover or cut a pulse short changes nothing.

/** Who asks: `modbus:<address>` for logs, and the connection's signal (closed = drop what still waits). */
export interface ClientContext {
  who: string;
  signal: ClientSignal;
}

export interface GatewayOptions {
  maxAgeMs: number;
  write: boolean;
  control: OutputControl;
  stats: ModbusServerStats;
  share: BusShare;
  log: { info(message: string): void; warn(message: string): void };
  /** How long a request may wait for the line and its answer. */
  deadlineMs: number;
}

/** A coil that reads back as one bit of a holding register. */
interface CoilMirror {
  register: number;
  bit: number;
}

/**
 * The board's coils that mirror an output bit of its value register, by coil
 * address: the firmware answers FC1 on coil `val_coil + i` with bit i of
 * `val_reg`. Only groups of at most 16 channels: there a coil is one bit of
 * one register beyond doubt. Action coils (watchdog reset, NV save, 1-Wire
 * power) are pulses with no register behind them, so they are not here and
 * always go to the board; so do discrete inputs (FC2), which the boards map
 * to no register iogate polls.
 */
function coilMirrors(model: SlaveUnit['model']): Map<number, CoilMirror> {
  const mirrors = new Map<number, CoilMirror>();
  for (const feature of model.features) {
    if ((feature.type === 'DO' || feature.type === 'RO' || feature.type === 'LED') && feature.count <= 16) {
      for (let bit = 0; bit < feature.count; bit++) mirrors.set(feature.val_coil + bit, { register: feature.val_reg, bit });
    }
  }
  return mirrors;
}

export class SlaveGateway {
  private readonly coils: Map<number, CoilMirror>;

  constructor(
    readonly slave: SlaveUnit,
    private readonly options: GatewayOptions,
  ) {
    this.coils = coilMirrors(slave.model);
  }

  /** Reads go without an async frame of their own: on a busy line each one costs every request. */
  serve(request: ModbusRequest, client: ClientContext): Promise<ModbusResponse> {
    if (this.slave.state === 'offline') {
      return Promise.reject(new ModbusPduError(EXCEPTION.GATEWAY_TARGET_FAILED, this.slave.offlineReason() ?? 'offline'));
    }
    if (isRead(request)) return this.read(request, client);
    return this.serveWrite(request as WriteRequest, client);
  }

  private async serveWrite(write: WriteRequest, client: ClientContext): Promise<ModbusResponse> {
    if (!this.options.write) {
      this.options.stats.refusedWrites++;
      throw new ModbusPduError(EXCEPTION.ILLEGAL_FUNCTION, 'the Modbus TCP server is read-only (apis.modbus_server.write: false)');
    }
    await this.write(write, client);
    return write.fc === 5 || write.fc === 6 ? write : { fc: write.fc, address: write.address, quantity: write.values.length };
  }

  private read(request: ReadRequest, client: ClientContext): Promise<ModbusResponse> {
    const fc = request.fc;
    if (fc === 3 || fc === 4) {
      const cached = this.cached(fc === 3 ? 'holding' : 'input', request.address, request.quantity);
      if (cached) {
        this.options.stats.cacheHits++;
        return Promise.resolve({ fc, registers: Array.from(cached) });
      }
    } else if (fc === 1) {
      const bits = this.cachedCoils(request.address, request.quantity);
      if (bits) {
        this.options.stats.cacheHits++;
        return Promise.resolve({ fc, bits });
      }
    }
    return this.passthrough(request, client);
  }

  /**
   * Coils read from the polled value registers they mirror, each register
   * from a poll no older than max_age_ms; undefined (the board answers) when
   * any coil of the run mirrors no register or its register is not fresh.
   */
  private cachedCoils(address: number, quantity: number): boolean[] | undefined {
    const bits = new Array<boolean>(quantity);
    for (let i = 0; i < quantity; i++) {
      const mirror = this.coils.get(address + i);
      if (!mirror) return undefined;
      const word = this.cached('holding', mirror.register, 1);
      if (!word) return undefined;
      bits[i] = ((word[0]! >> mirror.bit) & 1) === 1;
    }
    return bits;
  }

  /** The registers from one poll no older than max_age_ms, or undefined. */
  private cached(space: 'holding' | 'input', address: number, quantity: number): Uint16Array | undefined {
    const { cache } = this.slave;
    const index = cache.blockIndexOf(space, address, quantity);
    if (index < 0) return undefined;
    const block = cache.blocks[index]!;
    if (!block.valid || performance.now() - block.readAt > this.options.maxAgeMs) return undefined;
    return cache.getRun(space, address, quantity) ?? undefined;
  }

  /** A request the board answers itself, queued on the bus with the polls (priority `poll`: it waits its turn). */
  private passthrough(request: ModbusRequest, client: ClientContext): Promise<ModbusResponse> {
    this.options.stats.passthroughs++;
    const { slave } = this;
    const priority = request.fc <= 4 ? 'poll' : 'write';
    return this.options.share.run(() =>
      slave.bus.request(slave.unit, request, priority, { signal: client.signal, deadline: performance.now() + this.options.deadlineMs, retries: 0 }),
    );
  }

  private async write(request: ModbusRequest & { fc: 5 | 6 | 15 | 16 }, client: ClientContext): Promise<void> {
    const coils = request.fc === 5 || request.fc === 15;
    const values: Array<number | boolean> = request.fc === 5 || request.fc === 6 ? [request.value] : request.values;
    const moves: OutputMoves = coils
      ? coilWriteMoves(this.slave, request.address, values as boolean[])
      : registerWriteMoves(this.slave, request.address, values as number[]);
    const raw = async (): Promise<void> => {
      await this.passthrough(request, client);
      if (!coils) this.slave.cache.patch('holding', request.address, values as number[]);
      else this.patchMirrors(request.address, values as boolean[]);
    };
    const run = async (): Promise<void> => {
      if (moves.moves.length + moves.handovers.length === 0) return raw();
      // Named in the control layer's messages; the write is decided on its moves, not on this device.
      const device = moves.moves[0]?.output ?? moves.handovers[0]!.input;
      let admitted;
      try {
        admitted = this.options.control.admitMoves(device, {}, moves);
      } catch (error) {
        throw this.refusal(error, request, client);
      }
      let sentRaw = false;
      try {
        await admitted.run(async () => {
          sentRaw = true;
          await raw();
        });
      } catch (error) {
        throw this.refusal(error, request, client);
      }
      // The control layer carried the outputs' moves out one by one: what else the write held goes as it is.
      if (!sentRaw) await this.writeUnowned(request, values, client);
    };
    const deadline = performance.now() + this.options.deadlineMs;
    // The audit log names the write by its unit and address, as the master sent it.
    const target = `unit ${this.slave.unit} ${coils ? 'coil' : 'register'} ${request.address}`;
    const actor = { who: client.who, from: client.who.replace(/^modbus:/, ''), interface: 'modbus' };
    try {
      await writeGate.pass(() => withRequestContext({ signal: client.signal, deadline }, run));
      audit(actor, target, { fc: request.fc, values }, 'ok');
    } catch (error) {
      audit(actor, target, { fc: request.fc, values }, auditResult(error));
      throw error;
    } finally {
      this.slave.refreshAll();
    }
    countWrite(this.options.stats, client.who);
    this.options.log.info(`Modbus TCP: ${client.who} wrote ${describe(request)} of unit ${this.slave.unit} (bus ${this.slave.bus.name})`);
  }

  /**
   * After a confirmed raw coil write: the output bits it set in their value
   * registers, so a read from the cache shows them at once, not after the next poll.
   */
  private patchMirrors(address: number, values: readonly boolean[]): void {
    const { cache } = this.slave;
    for (const effect of coilWriteEffects(this.slave.model, address, values)) {
      if (effect.kind !== 'value' || !effect.output) continue;
      const register = effect.output.feature.val_reg + Math.floor(effect.output.index / 16);
      const current = cache.get('holding', register);
      if (current === null) continue;
      const mask = 1 << effect.output.index % 16;
      cache.patch('holding', register, [effect.on ? current | mask : current & ~mask]);
    }
  }

  /** The registers or coils of a write that move no output, in runs of consecutive addresses. */
  private async writeUnowned(request: ModbusRequest & { fc: 5 | 6 | 15 | 16 }, values: Array<number | boolean>, client: ClientContext): Promise<void> {
    const coils = request.fc === 5 || request.fc === 15;
    const owned = values.map((value, i) =>
      coils
        ? coilWriteEffects(this.slave.model, request.address + i, [value as boolean]).length > 0
        : registerWriteEffects(this.slave.model, request.address + i, [value as number]).length > 0,
    );
    let i = 0;
    while (i < values.length) {
      if (owned[i]) {
        i++;
        continue;
      }
      let end = i;
      while (end < values.length && !owned[end]) end++;
      const address = request.address + i;
      const run: ModbusRequest = coils
        ? { fc: 15, address, values: values.slice(i, end) as boolean[] }
        : { fc: 16, address, values: values.slice(i, end) as number[] };
      await this.passthrough(run, client);
      if (!coils) this.slave.cache.patch('holding', address, run.values as number[]);
      i = end;
    }
  }

  /** A rule refused the write: exception 04, nothing written; anything else goes on as it is. */
  private refusal(error: unknown, request: ModbusRequest, client: ClientContext): unknown {
    if (!(error instanceof RequestError || error instanceof ValidationError)) return error;
    this.options.stats.refusedWrites++;
    this.options.log.warn(`Modbus TCP: ${client.who}: write ${describe(request)} of unit ${this.slave.unit} refused: ${error.message}`);
    return new ModbusPduError(EXCEPTION.SLAVE_DEVICE_FAILURE, error.message);
  }
}

type ReadRequest = ModbusRequest & { fc: 1 | 2 | 3 | 4 };
type WriteRequest = ModbusRequest & { fc: 5 | 6 | 15 | 16 };

function isRead(request: ModbusRequest): request is ReadRequest {
  return request.fc <= 4;
}

function describe(request: ModbusRequest): string {
  switch (request.fc) {
    case 5:
      return `coil ${request.address}=${request.value ? 1 : 0}`;
    case 6:
      return `register ${request.address}=${request.value}`;
    case 15:
      return `${request.values.length} coils from ${request.address}`;
    case 16:
      return `${request.values.length} registers from ${request.address}`;
    default:
      return `function ${request.fc}`;
  }
}

/** A bus failure as the exception a TCP-to-RTU gateway answers. */
export function exceptionOf(error: unknown): number {
  if (error instanceof ModbusPduError) return error.exceptionCode;
  if (!(error instanceof ModbusError)) return EXCEPTION.SLAVE_DEVICE_FAILURE;
  switch (error.kind) {
    case 'exception': {
      // A board's own exception is passed on when it is one of the standard codes; anything else is a failure of the board.
      const code = error.exceptionCode ?? 0;
      return code >= 1 && code <= EXCEPTION.GATEWAY_TARGET_FAILED ? code : EXCEPTION.SLAVE_DEVICE_FAILURE;
    }
    case 'timeout':
    case 'unknown':
    case 'offline':
    case 'protocol':
      return EXCEPTION.GATEWAY_TARGET_FAILED;
    case 'disconnected':
      return EXCEPTION.GATEWAY_PATH_UNAVAILABLE;
    case 'busy':
    case 'expired':
    case 'cancelled':
      return EXCEPTION.SLAVE_DEVICE_BUSY;
    case 'invalid':
      return EXCEPTION.ILLEGAL_DATA_VALUE;
  }
}
