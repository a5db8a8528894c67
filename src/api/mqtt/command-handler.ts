import type { Actor } from '../../registry/audit-trail.js';
import type { Device } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';
import type { Logger } from '../../logging/log.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { writeDevice } from '../../registry/write.js';
import { errorBody } from '../http/respond.js';
import { MAX_COMMAND_BYTES, parseCommandPayload } from './command-payload.js';
import { isOversizeMarker } from './size-guard.js';
import { SerialQueue } from './serial-queue.js';
import type { MqttSink } from './sink.js';
import type { Topics } from './topics.js';

/** Commands from the broker: the broker's ACL decided who may publish them. */
const MQTT_ACTOR: Actor = { who: 'mqtt', from: '', interface: 'mqtt' };

// `<prefix>/cmd/<dev>/<circuit>` → the common write path → an answer on
// `<prefix>/ack/<dev>/<circuit>`, also for topics and payloads that make no
// sense, so a client never waits in vain. The message handler only queues:
// a slow or dead slave holds up nothing but later commands for the same device.

/** Commands one device may have queued; a client flooding one output gets refusals, not a growing queue. */
const MAX_QUEUED_PER_DEVICE = 32;

/**
 * The longest `<dev>/<circuit>` that is answered. A command topic is echoed in
 * its answer's topic and error text, so a client publishing to ever new long
 * topics would otherwise make ever new packet sizes, and the MQTT client keeps
 * one encoded length per size it ever sent. No type with an alias comes near.
 */
export const MAX_COMMAND_PATH = 256;

export interface CommandHandlerOptions {
  sink: MqttSink;
  topics: Topics;
  registry: Registry;
  feed: ChangeFeed;
  qos: 0 | 1 | 2;
  log: Logger;
}

export class CommandHandler {
  private readonly queue = new SerialQueue<Device>(MAX_QUEUED_PER_DEVICE);

  constructor(private readonly options: CommandHandlerOptions) {}

  handle(topic: string, payload: Buffer, retained: boolean): void {
    const path = this.options.topics.commandPath(topic);
    if (path === undefined) return;
    if (path.length > MAX_COMMAND_PATH) {
      this.options.log.debug(`MQTT: command topic of ${path.length} characters after cmd/ ignored (at most ${MAX_COMMAND_PATH})`);
      return;
    }
    try {
      // A retained command would be carried out again on every reconnect.
      if (retained) throw new RequestError(400, 'RetainedCommand', 'retained commands are ignored; publish commands without the retain flag');
      if (isOversizeMarker(payload)) {
        throw new RequestError(413, 'InvalidPayload', `command payload exceeds ${MAX_COMMAND_BYTES} bytes; dropped unread`);
      }
      const device = this.resolve(path);
      const params = parseCommandPayload(device.type, payload);
      const queued = this.queue.run(device, () => this.write(path, device, params));
      if (!queued) throw new RequestError(429, 'Busy', `${MAX_QUEUED_PER_DEVICE} commands for ${device.type} ${device.circuit} are still waiting`);
    } catch (error) {
      this.answerError(path, error);
    }
  }

  private resolve(path: string): Device {
    const levels = path.split('/');
    if (levels.length !== 2 || levels.some((level) => level === '')) {
      throw new RequestError(404, 'InvalidTopic', `expected ${this.options.topics.prefix}/cmd/<dev>/<circuit>, got ${this.options.topics.prefix}/cmd/${path}`);
    }
    const [type, circuit] = levels as [string, string];
    return this.options.registry.resolve(type, circuit);
  }

  private async write(path: string, device: Device, params: Record<string, unknown>): Promise<void> {
    const { registry, feed } = this.options;
    try {
      await writeDevice(registry, feed, device, params, undefined, MQTT_ACTOR);
      this.answer(path, `{"success":true,"result":${device.json()}}`);
    } catch (error) {
      this.answerError(path, error);
    }
  }

  private answerError(path: string, error: unknown): void {
    if (error instanceof RequestError) {
      this.answer(path, errorBody(error.kind, error.message));
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    this.options.log.error(`MQTT: command on ${path} failed unexpectedly: ${message}`);
    this.answer(path, errorBody('InternalError', message));
  }

  /** Answers are for clients listening now; one that cannot be sent is dropped, not queued. */
  private answer(path: string, body: string): void {
    const { sink, topics, qos } = this.options;
    if (sink.connected) sink.publish(topics.ack(path), body, { qos, retain: false });
  }
}
