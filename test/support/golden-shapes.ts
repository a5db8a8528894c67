import { once } from 'node:events';
import { WebSocket } from 'ws';
import { startGate, until } from '../helpers/in-process.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

// What an EVOK client sees by default, captured from a fixed scene: the body
// of /rest/all, the WebSocket pushes and the webhook bodies (complex events)
// after one input change and one relay write. Values that move by themselves
// (a slave's last_comm, stale_s, ratios and request counts) are blanked.
//
// fixtures/golden/default-shapes.json was made by running this file with the
// code before the meta view existed (`node --import tsx
// test/support/golden-shapes.ts > fixtures/golden/default-shapes.json` in a
// checkout of that commit with this file and test/helpers/webhook-receiver.ts
// copied in); the golden test runs it on the current code and wants the same
// bytes.

export interface GoldenShapes {
  restAll: string;
  restDi: string;
  wsPushes: string[];
  webhookBodies: string[];
}

/** Two boards: a Neuron brain (DI, DO, AI, AO, LEDs, watchdog …) and an extension with relays. */
const SCENE = (hookPort: number) => `
apis:
  websocket:
    enabled: true
  webhook:
    enabled: true
    address: http://127.0.0.1:${hookPort}/hook
    device_mask: [di, ro]
    complex_events: true
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
        slave-id: 1
      2:
        model: "xS51"
        slave-id: 2
`;

/** Values of a `modbus_slave` that move with time, set to fixed ones. */
export function blankVolatile(text: string): string {
  return text.replace(/"(last_comm|success_ratio|stale_s|requests|timeouts|errors|last_scan_ms)":(-?[0-9.e+-]+|null)/g, '"$1":0');
}

export async function captureGoldenShapes(): Promise<GoldenShapes> {
  const receiver = await startWebhookReceiver();
  const webhookBodies = receiver.bodies;
  const gate = await startGate(SCENE(receiver.port));
  try {
    const restAll = blankVolatile(await (await fetch(`${gate.baseUrl}/rest/all`)).text());
    const restDi = await (await fetch(`${gate.baseUrl}/rest/di/1_01`)).text();
    const socket = new WebSocket(gate.wsUrl);
    socket.on('error', () => {});
    const wsPushes: string[] = [];
    socket.on('message', (data) => wsPushes.push(blankVolatile(String(data))));
    await once(socket, 'open');
    gate.setInput(0, true);
    await until(() => wsPushes.length >= 1 && webhookBodies.length >= 1, 'the input change to be pushed');
    const written = await fetch(`${gate.baseUrl}/json/ro/2_01`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"value":1}' });
    await written.text();
    await until(() => wsPushes.length >= 2 && webhookBodies.length >= 2, 'the relay write to be pushed');
    // Anything else that was going to come (it must not: nothing else moves).
    await new Promise((resolve) => setTimeout(resolve, 700));
    socket.close();
    return { restAll, restDi, wsPushes, webhookBodies: webhookBodies.map(blankVolatile) };
  } finally {
    await gate.close();
    receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(await captureGoldenShapes(), null, 1)}\n`);
}
