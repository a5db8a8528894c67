import type { Device } from '../../devices/device.js';

// Every topic iogate uses below its prefix. `<dev>` is always the canonical
// type name (`watchdog`, `sensor`), never the JSON `dev` field: `dev` is not
// unique per type (sensors say `temp` or `1wdevice`) while the canonical name
// is the key of the device table, and commands accept every alternate name.

/** Characters a published topic level must not contain: wildcards and the level separator. */
const UNPUBLISHABLE = /[+#/\u0000]/;

export class Topics {
  readonly status: string;
  readonly commandFilter: string;
  private readonly commandStart: string;

  constructor(readonly prefix: string) {
    this.status = `${prefix}/status`;
    this.commandFilter = `${prefix}/cmd/#`;
    this.commandStart = `${prefix}/cmd/`;
  }

  /** `<prefix>/event/<dev>/<circuit>`, or undefined when the circuit cannot be a topic level. */
  event(device: Device): string | undefined {
    return publishableLevel(device.circuit) ? `${this.prefix}/event/${device.type}/${device.circuit}` : undefined;
  }

  /** `<prefix>/event/di/<circuit>/counter_total`: a DI's never-decreasing total, a bare number. */
  counterTotal(device: Device): string | undefined {
    const event = this.event(device);
    return event === undefined ? undefined : `${event}/counter_total`;
  }

  /** `<prefix>/cmd/<dev>/<circuit>`: what Home Assistant entities send to. */
  command(device: Device): string {
    return `${this.commandStart}${device.type}/${device.circuit}`;
  }

  /** The part of a received command topic after `<prefix>/cmd/`, or undefined for other topics. */
  commandPath(topic: string): string | undefined {
    return topic.startsWith(this.commandStart) ? topic.slice(this.commandStart.length) : undefined;
  }

  /** Acknowledgements mirror the command topic, so a client finds the answer to what it sent. */
  ack(commandPath: string): string {
    return `${this.prefix}/ack/${commandPath}`;
  }

  /** `<prefix>/availability/<slave name>`, or undefined when the name cannot be a topic level. */
  availability(slaveName: string): string | undefined {
    return publishableLevel(slaveName) ? `${this.prefix}/availability/${slaveName}` : undefined;
  }
}

function publishableLevel(level: string): boolean {
  return level !== '' && !UNPUBLISHABLE.test(level);
}
