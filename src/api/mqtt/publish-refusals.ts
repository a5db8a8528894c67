import type { IClientPublishOptions, MqttClient } from 'mqtt';
import type { Logger } from '../../logging/log.js';
import { QuietLog } from '../sparkplug/quiet-log.js';
import type { MqttSink } from './sink.js';

// Publishes the broker refused. Over MQTT 5 a broker answers a QoS 1 or 2
// publish its ACL denies with reason code 0x87 "not authorized" in the PUBACK
// (PUBREC); Mosquitto 2.0 does so for its acl_file and its dynamic-security
// plugin alike. (At QoS 0, or over MQTT 3.1.1, the publish is dropped and the
// client cannot tell.) A refusal is logged, counted as `publish_denied`, and a
// retained message (a state, availability, discovery, `status`) is sent again
// with growing delays, so once the ACL is fixed (Mosquitto re-reads it on
// SIGHUP) the broker ends up holding the latest of each without a reconnect.
// Acks, which answer one command, are not sent again.

const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 60_000;
/** Refused retained topics waiting to be sent again: more than a config has, as a bound on a broken broker. */
const MAX_PENDING = 10_000;

type Message = string | Buffer;

export interface PublishRefusals {
  /** What the publishers send through: the client, with every acknowledgement checked. */
  readonly sink: MqttSink;
  /** Stops the retries (the bridge is stopping). */
  stop(): void;
}

/**
 * `note` counts a refusal (the link's failure counts, for /metrics).
 */
export function watchPublishRefusals(client: MqttClient, log: Logger, note: () => void): PublishRefusals {
  const quiet = new QuietLog((message) => log.warn(message));
  /** The newest publish per retained topic, by number: only its outcome counts. */
  const newest = new Map<string, number>();
  const pending = new Map<string, { message: Message; options: IClientPublishOptions }>();
  let issued = 0;
  let retryMs = FIRST_RETRY_MS;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const retry = (): void => {
    timer = undefined;
    if (stopped || !client.connected) return;
    const due = [...pending];
    pending.clear();
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    for (const [topic, { message, options }] of due) publish(topic, message, options);
  };

  const publish = (topic: string, message: Message, options: IClientPublishOptions, callback?: (error?: Error) => void): void => {
    const number = ++issued;
    if (options.retain) newest.set(topic, number);
    client.publish(topic, message, options, (error) => {
      const code = (error as { code?: unknown } | undefined)?.code;
      if (typeof code === 'number' && code >= 0x80) {
        note();
        const why = code === 0x87 ? 'not authorized (ACL)' : `${error!.message.replace(/^Publish error: /, '')}`;
        const again = options.retain ? `; retained, so sent again in ${retryMs / 1000} s, then less and less often` : '';
        quiet.note(`refused-${code}`, `MQTT: the broker refused a publish to ${topic}: ${why} [publish_denied] (reason code 0x${code.toString(16)})${again}`);
        if (options.retain && newest.get(topic) === number && (pending.has(topic) || pending.size < MAX_PENDING)) {
          pending.set(topic, { message, options });
          if (!stopped) timer ??= setTimeout(retry, retryMs);
        }
      } else if (!error && options.retain && newest.get(topic) === number && pending.size === 0) {
        retryMs = FIRST_RETRY_MS;
      }
      callback?.(error);
    });
  };

  client.on('connect', () => {
    // Everything is published afresh on a new connection.
    pending.clear();
    clearTimeout(timer);
    timer = undefined;
    retryMs = FIRST_RETRY_MS;
  });

  const sink: MqttSink = {
    get connected() {
      return client.connected;
    },
    publish: ((topic: string, message: Message, options?: IClientPublishOptions | ((error?: Error) => void), callback?: (error?: Error) => void) => {
      if (typeof options === 'function') publish(topic, message, {}, options);
      else publish(topic, message, options ?? {}, callback);
      return client;
    }) as MqttSink['publish'],
  };
  return {
    sink,
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
