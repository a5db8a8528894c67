import { ModbusError } from '../../modbus/errors.js';

// The server's share of one bus. A Modbus TCP client can ask as fast as the
// network carries; every request sent on goes into the bus queue beside the
// polls. At most one of the server's requests waits in that queue or is on
// the wire at a time per bus, so a poll waits behind at most one of them and
// polling keeps its rate however many clients read; the others wait here, a
// bounded number, and beyond that get "busy" (exception 06) at once.

/** Server requests that may wait for their turn on one bus. */
export const MAX_WAITING_PER_BUS = 64;

export class BusShare {
  private busy = false;
  private readonly waiting: Array<() => void> = [];

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.busy) {
      if (this.waiting.length >= MAX_WAITING_PER_BUS) {
        throw new ModbusError('busy', `${MAX_WAITING_PER_BUS} Modbus TCP requests already wait for this bus`);
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.busy = true;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    }
  }
}
