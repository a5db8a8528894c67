import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stillBoardYaml, startGate } from '../../helpers/in-process.js';
import { connect } from '../../helpers/ws-client.js';

// EVOK reported every device of a board on the first poll after it was read,
// so WebSocket clients already connected got the board's full state once.
// A board switched off at start does so when it first answers: one push with
// every device EVOK pushes (no registers, no modbus_slave), once.

const RELAY_BOARD = `      2:
        model: "01"
        slave-id: 2
`;

const EVENT_TYPES = ['di', 'ro', 'do', 'ai', 'ao', 'led', 'wd', 'data_point'];

test('a board coming online for the first time pushes its full state once to connected clients', async () => {
  const gate = await startGate(stillBoardYaml({ devices: RELAY_BOARD }), { firstStates: true, silentUnits: [2] });
  try {
    const client = await connect(gate.wsUrl);
    const board = [...gate.runtime.simulations.values()][0]!.boards.get(2)!;
    board.silent = false;
    const pushed = (await client.nextMatching((message) => Array.isArray(message) && message.some((device: { circuit: string }) => device.circuit.startsWith('2_')))) as Array<{ dev: string; circuit: string }>;
    const listed = (await (await fetch(`${gate.baseUrl}/rest/all`)).json()) as Array<{ dev: string; circuit: string }>;
    const expected = listed.filter((device) => device.circuit.startsWith('2_') && EVENT_TYPES.includes(device.dev));
    assert.ok(expected.length > 0);
    const key = (device: { dev: string; circuit: string }) => `${device.dev} ${device.circuit}`;
    assert.deepEqual(pushed.map(key).sort(), expected.map(key).sort());
    assert.deepEqual([...pushed].sort((a, b) => key(a).localeCompare(key(b))), [...expected].sort((a, b) => key(a).localeCompare(key(b))));
    // Once: nothing more about that board while nothing changes.
    const slave = gate.runtime.slaves.find((candidate) => candidate.name === '2')!;
    const target = slave.stats.scans + 5;
    while (slave.stats.scans < target) await new Promise((resolve) => setTimeout(resolve, 5));
    const later = client.received.slice(client.received.indexOf(pushed) + 1);
    assert.deepEqual(later.filter((message) => Array.isArray(message) && message.some((device: { circuit: string }) => device.circuit.startsWith('2_'))), []);
  } finally {
    await gate.close();
  }
});
