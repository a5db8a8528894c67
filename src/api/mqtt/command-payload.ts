import type { DeviceType } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';

// What a command message may carry: a JSON object of writable fields (as the
// JSON API's POST body), or, for binary outputs, one plain word or JSON value
// (`ON`, `1`, `255`, `true`), which is what switches in Home Assistant,
// Node-RED and mosquitto_pub send most easily. A value is judged as every
// other API judges `value` (EVOK's int() and truthiness).

const BINARY_OUTPUTS: ReadonlySet<DeviceType> = new Set(['do', 'ro', 'led']);
const PLAIN_ON = new Set(['1', 'on', 'true']);
const PLAIN_OFF = new Set(['0', 'off', 'false']);
const COVER_COMMANDS = new Set(['open', 'close', 'stop']);

/** Commands are a few fields; anything far larger is a mistake, not worth parsing. */
export const MAX_COMMAND_BYTES = 64 * 1024;

export function parseCommandPayload(type: DeviceType, payload: Buffer): Record<string, unknown> {
  if (payload.length > MAX_COMMAND_BYTES) {
    throw new RequestError(413, 'InvalidPayload', `command payload of ${payload.length} bytes exceeds ${MAX_COMMAND_BYTES}`);
  }
  const text = payload.toString('utf8').trim();
  if (type === 'cover') {
    // Home Assistant's default cover payloads, and a bare number as the position.
    const word = text.toLowerCase();
    if (COVER_COMMANDS.has(word)) return { command: word };
    if (/^\d+(\.\d+)?$/.test(text)) return { position: Number(text) };
  }
  if (BINARY_OUTPUTS.has(type)) {
    const word = text.toLowerCase();
    if (PLAIN_ON.has(word)) return { value: 1 };
    if (PLAIN_OFF.has(word)) return { value: 0 };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new RequestError(400, 'InvalidPayload', expectation(type, text));
  }
  if (BINARY_OUTPUTS.has(type) && ['number', 'boolean', 'string'].includes(typeof parsed)) return { value: parsed };
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RequestError(400, 'InvalidPayload', expectation(type, text));
  }
  return parsed as Record<string, unknown>;
}

function expectation(type: DeviceType, text: string): string {
  const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  const plain = BINARY_OUTPUTS.has(type) ? ' or a value (ON, OFF, a number, true, false)' : type === 'cover' ? ' or OPEN, CLOSE, STOP or a position 0..100' : '';
  return `payload '${shown}' is not a JSON object of fields to write${plain}`;
}
