import type { SerialPort } from 'serialport';
import { rtuSilenceMs } from '../modbus/rtu-framer.js';
import { eofSafeBinding } from './eof-safe-binding.js';
import type { Link, LinkHandlers } from './link.js';
import { loadSerialDriver } from './serial-driver.js';
import { lockedPortError } from './serial-lock.js';

// Modbus RTU over a serial port (RS485 on the PLC, a USB adapter, or a pty in
// tests). The serialport package and its native addon are loaded on the first
// open, so a daemon with only TCP buses never touches them (and runs where no
// prebuilt addon exists).

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
  private port: SerialPort | undefined;

  constructor(private readonly settings: SerialSettings) {
    this.silenceMs = rtuSilenceMs(settings.baudrate, bitsPerCharacter(settings));
  }

  get spec(): string {
    return this.settings.path;
  }

  async open(handlers: LinkHandlers): Promise<void> {
    const SerialPort = await loadSerialDriver();
    const { path, baudrate, parity, stopbits } = this.settings;
    const port = new SerialPort({
      // SerialPort takes a binding in place of the detected one, though its options type does not say so.
      ...({ binding: eofSafeBinding(SerialPort.binding) } as object),
      path,
      baudRate: baudrate,
      dataBits: 8,
      parity: PARITY[parity],
      stopBits: stopbits,
      autoOpen: false,
      // An exclusive lock: a second master on the same RS485 line corrupts both.
      lock: true,
    });
    await new Promise<void>((resolve, reject) => port.open((error) => (error ? reject(lockedPortError(path, error)) : resolve())));
    port.on('data', (chunk: Buffer) => handlers.data(chunk));
    port.on('error', () => {
      // A read or write error on an open port ends in 'close', which reports it.
    });
    // Emitted when the device vanishes (USB adapter unplugged, pty peer gone)
    // as well as after close(); only the former is news to the bus.
    port.once('close', (error: Error | null) => {
      if (this.port !== port) return;
      this.port = undefined;
      handlers.closed(error ? `serial port ${path}: ${error.message}` : `serial port ${path} closed`);
    });
    this.port = port;
  }

  write(frame: Buffer): void {
    this.port?.write(frame);
  }

  async close(): Promise<void> {
    const port = this.port;
    this.port = undefined;
    if (!port?.isOpen) return;
    await new Promise<void>((resolve) => port.close(() => resolve()));
  }
}
