import { rtuSilenceMs } from '../modbus/rtu-framer.js';
import type { Link, LinkHandlers } from './link.js';
import { loadSerialDriver } from './serial-driver.js';
import { lockedPortError } from './serial-lock.js';
import { startPortIo, type BindingPort, type PortIo } from './serial-port-io.js';

// Modbus RTU over a serial port (RS485 on the PLC, a USB adapter, or a pty in
// tests). The serialport package and its native addon are loaded on the first
// open, so a daemon with only TCP buses never touches them (and runs where no
// prebuilt addon exists). Its binding opens, configures, locks and closes the
// port; the bytes go through serial-port-io.ts, not through its stream.

export interface SerialSettings {
  path: string;
  baudrate: number;
  parity: 'N' | 'E' | 'O';
  stopbits: 1 | 2;
}

const PARITY = { N: 'none', E: 'even', O: 'odd' } as const;

/** Start bit, 8 data bits, optional parity bit, stop bits. */
export function bitsPerCharacter(settings: Pick<SerialSettings, 'parity' | 'stopbits'>): number {
  return 1 + 8 + (settings.parity === 'N' ? 0 : 1) + settings.stopbits;
}

export class SerialLink implements Link {
  readonly framing = 'RTU' as const;
  readonly silenceMs: number;
  private port: BindingPort | undefined;
  private io: PortIo | undefined;

  constructor(private readonly settings: SerialSettings) {
    this.silenceMs = rtuSilenceMs(settings.baudrate, bitsPerCharacter(settings));
  }

  get spec(): string {
    return this.settings.path;
  }

  async open(handlers: LinkHandlers): Promise<void> {
    const { binding } = await loadSerialDriver();
    const { path, baudrate, parity, stopbits } = this.settings;
    let port: BindingPort;
    try {
      port = (await binding.open({
        path,
        baudRate: baudrate,
        dataBits: 8,
        parity: PARITY[parity],
        stopBits: stopbits,
        // An exclusive lock: a second master on the same RS485 line corrupts both.
        lock: true,
      })) as unknown as BindingPort;
    } catch (error) {
      throw lockedPortError(path, error as Error);
    }
    this.port = port;
    this.io = startPortIo(port, {
      data: (chunk) => handlers.data(chunk),
      // The device vanished (USB adapter unplugged, pty peer gone) or failed:
      // the port is closed and the bus reopens it.
      failed: (error) => {
        if (this.port !== port) return;
        this.port = undefined;
        this.io = undefined;
        void closeQuietly(port).then(() => handlers.closed(`serial port ${path}: ${error.message}`));
      },
    });
  }

  write(frame: Buffer): void {
    this.io?.write(frame);
  }

  async close(): Promise<void> {
    const port = this.port;
    this.io?.stop();
    this.port = undefined;
    this.io = undefined;
    if (port) await closeQuietly(port);
  }
}

/** Closes a port that may already be closed; a failure to close leaves nothing to do. */
async function closeQuietly(port: BindingPort): Promise<void> {
  if (!port.isOpen) return;
  try {
    await port.close();
  } catch {
    // Already gone with its device.
  }
}
