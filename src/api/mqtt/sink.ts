import type { MqttClient } from 'mqtt';

// The part of the broker connection the publishers use. Publishers send only
// while `connected`: whatever would be sent while the broker is away is kept
// (coalesced) by its owner and sent on the next connect, not queued in mqtt.js.

export type MqttSink = Pick<MqttClient, 'connected' | 'publish'>;
