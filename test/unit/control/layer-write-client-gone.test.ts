import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startGate, STILL_BOARD, until } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { connect } from '../../helpers/ws-client.js';

// The control layer's own writes (a pulse's end) belong to no client. A
// WebSocket client's writes carry its "gone" signal, so a write still waiting
// for the line is dropped once it disconnects; the pulse it started must end
// all the same. Its timer was armed while that client's write ran, so the
// end's off must not inherit the client's signal. Judged at the board.

test("a pulse started over the WebSocket ends at the board after that client went away", async () => {
  const gate = await startGate(STILL_BOARD);
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(1)]);
  try {
    const ws = await connect(gate.wsUrl);
    ws.send({ cmd: 'set', dev: 'do', circuit: '1_01', value: 1, pulse_ms: 2000 });
    await until(() => timeline.isOn('do/1_01'), 'the pulse to switch do/1_01 on at the board', 5000);
    await ws.close();
    await until(() => gate.ws!.clients.size === 0, 'the server to see the client go', 5000);
    assert.equal(timeline.isOn('do/1_01'), true, 'the client left while the pulse ran');
    await until(() => !timeline.isOn('do/1_01'), "the pulse's end to switch do/1_01 off at the board", 7000);
  } finally {
    timeline.stop();
    await gate.close();
  }
});
