// A link is a byte pipe to one Modbus line: a serial port, a TCP socket or the
// in-memory wire to the built-in simulator. The bus above it owns framing,
// timing and retries, so links stay dumb and interchangeable.

export interface LinkHandlers {
  data(chunk: Buffer): void;
  /** The link went away (port unplugged, peer closed); the bus reconnects. */
  closed(reason: string): void;
}

export interface Link {
  /** `RTU` or `TCP`: what the `modbus_slave` device reports as `modbus_type`. */
  readonly framing: 'RTU' | 'TCP';
  /** Serial port path or host name, reported as `modbus_spec`. */
  readonly spec: string;
  /** Minimum silence between frames in ms (RTU t3.5); 0 where the medium delimits frames. */
  readonly silenceMs: number;
  open(handlers: LinkHandlers): Promise<void>;
  write(frame: Buffer): void;
  close(): Promise<void>;
}

/**
 * Thrown by `open` when the link can never open in this process (its driver
 * is missing, say). The bus logs the message once and stays down instead of
 * retrying with back-off.
 */
export class LinkUnavailable extends Error {}
