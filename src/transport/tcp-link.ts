import { Socket } from 'node:net';
import type { Link, LinkHandlers } from './link.js';

// Modbus TCP: one socket per bus; MBAP frames carry their own lengths, so no
// inter-frame silence is needed.

export class TcpLink implements Link {
  readonly framing = 'TCP' as const;
  readonly silenceMs = 0;
  private socket: Socket | undefined;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly connectTimeoutMs = 3000,
  ) {}

  get spec(): string {
    return this.host;
  }

  open(handlers: LinkHandlers): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = new Socket();
      const fail = (error: Error) => {
        socket.destroy();
        reject(error);
      };
      socket.setTimeout(this.connectTimeoutMs, () => fail(new Error(`connect to ${this.host}:${this.port} timed out`)));
      socket.on('error', fail);
      socket.connect(this.port, this.host, () => {
        socket.setTimeout(0);
        socket.setNoDelay(true);
        socket.off('error', fail);
        // For the socket's whole life: a reset or a broken pipe from the slave or gateway; 'close' follows and reports it.
        let lastError: Error | undefined;
        socket.on('error', (error) => (lastError = error));
        socket.on('data', (chunk) => handlers.data(chunk));
        socket.once('close', () => {
          if (this.socket === socket) this.socket = undefined;
          handlers.closed(`connection to ${this.host}:${this.port} closed${lastError ? ` (${lastError.message})` : ''}`);
        });
        this.socket = socket;
        resolve();
      });
    });
  }

  write(frame: Buffer): void {
    this.socket?.write(frame);
  }

  async close(): Promise<void> {
    const socket = this.socket;
    this.socket = undefined;
    socket?.destroy();
  }
}
