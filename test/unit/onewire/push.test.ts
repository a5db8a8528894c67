import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { startGate, until } from '../../helpers/in-process.js';
import { connect } from '../../helpers/ws-client.js';

// Sensor changes reach the push interfaces as every other device's: the
// webhook (whose default mask names `sensor`) gets JSON arrays, and a
// WebSocket filter by EVOK's name `temp` selects them. (EVOK sent sensor
// events as bare objects, which made its own webhook fail.)

test('the webhook POSTs sensor changes as arrays; a WebSocket filtered on `temp` gets them', async () => {
  const bodies: unknown[] = [];
  const receiver = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      bodies.push(JSON.parse(body));
      res.end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const { port } = receiver.address() as AddressInfo;
  const gate = await startGate(`
alias_file: alias.yaml
apis:
  websocket:
    enabled: true
  webhook:
    enabled: true
    address: http://127.0.0.1:${port}/hook
    complex_events: true
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
  OW:
    type: OWFS
    interval: 1
    simulate: [28]
`);
  const ws = await connect(gate.wsUrl);
  try {
    ws.send({ cmd: 'filter', devices: ['temp'] });
    const pushed = await ws.nextMatching((message) => Array.isArray(message) && message.length > 0, 5000);
    assert.ok(pushed.every((device: { dev: string }) => device.dev === 'temp'), JSON.stringify(pushed));
    await until(() => bodies.some((body) => Array.isArray(body) && body.some((device) => device.dev === 'temp')), 'a webhook delivery');
    assert.ok(bodies.every((body) => Array.isArray(body)));
  } finally {
    await ws.close();
    await gate.close();
    receiver.close();
  }
});
