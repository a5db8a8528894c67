// Slave side of the protocol: turns one request PDU into one response PDU
// against a register store. Transport-free so the simulator can serve RTU and
// TCP alike, and so the behaviour can be tested without sockets.

import {
  EXCEPTION,
  ModbusPduError,
  decodeRequest,
  encodeResponse,
  type ModbusRequest,
  type ModbusResponse,
} from './pdu.js';

export interface SlaveStore {
  /** undefined -> ILLEGAL_DATA_ADDRESS */
  readRegisters(space: 'holding' | 'input', address: number, quantity: number): number[] | undefined;
  readBits(space: 'coil' | 'discrete', address: number, quantity: number): boolean[] | undefined;
  /** false -> ILLEGAL_DATA_ADDRESS */
  writeRegisters(address: number, values: number[]): boolean;
  writeCoils(address: number, values: boolean[]): boolean;
  /** False while the device is switched off: it answers nothing at all (a simulator's fault). */
  readonly powered?: boolean;
}

/** Never throws: malformed requests and store failures become exception responses. */
export function serveRequest(store: SlaveStore, pdu: Buffer): Buffer {
  const fc = pdu.length > 0 ? pdu[0]! & 0x7f : 0;
  try {
    return encodeResponse(execute(store, decodeRequest(pdu)));
  } catch (error) {
    // Anything but a decode error is the store misbehaving, which a real
    // device reports as an internal failure rather than going silent.
    const exception =
      error instanceof ModbusPduError ? error.exceptionCode : EXCEPTION.SLAVE_DEVICE_FAILURE;
    // Built by hand: encodeResponse would reject the function code 0 of an empty PDU.
    return Buffer.from([fc | 0x80, exception]);
  }
}

function illegalAddress(req: ModbusRequest): ModbusPduError {
  return new ModbusPduError(
    EXCEPTION.ILLEGAL_DATA_ADDRESS,
    `function ${req.fc}: address ${req.address} not served`,
  );
}

function checkCount<T>(values: T[] | undefined, quantity: number, req: ModbusRequest): T[] {
  if (values === undefined) throw illegalAddress(req);
  if (values.length !== quantity) {
    throw new Error(`store returned ${values.length} values for ${quantity} requested`);
  }
  return values;
}

function execute(store: SlaveStore, req: ModbusRequest): ModbusResponse {
  switch (req.fc) {
    case 1:
    case 2: {
      const space = req.fc === 1 ? 'coil' : 'discrete';
      const bits = store.readBits(space, req.address, req.quantity);
      return { fc: req.fc, bits: checkCount(bits, req.quantity, req) };
    }
    case 3:
    case 4: {
      const space = req.fc === 3 ? 'holding' : 'input';
      const registers = store.readRegisters(space, req.address, req.quantity);
      return { fc: req.fc, registers: checkCount(registers, req.quantity, req) };
    }
    case 5:
      if (!store.writeCoils(req.address, [req.value])) throw illegalAddress(req);
      return { fc: 5, address: req.address, value: req.value };
    case 6:
      if (!store.writeRegisters(req.address, [req.value])) throw illegalAddress(req);
      return { fc: 6, address: req.address, value: req.value };
    case 15:
      if (!store.writeCoils(req.address, req.values)) throw illegalAddress(req);
      return { fc: 15, address: req.address, quantity: req.values.length };
    case 16:
      if (!store.writeRegisters(req.address, req.values)) throw illegalAddress(req);
      return { fc: 16, address: req.address, quantity: req.values.length };
  }
}
