import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { builtinModels } from '../../../src/boards/builtin/index.js';
import { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { startHeldWriteSlave, type HeldWriteSlave } from '../../helpers/held-write-slave.js';
import { get, postForm } from '../../helpers/http.js';
import { startGate, stillBoardYaml, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline, RELAY_01 } from '../../helpers/output-timeline.js';

// A relay section that carries out a write and drops its reply: the write
// fails (timeout), yet the relay switched. Until the board is read again,
// iogate's copy says off; switching the other member of its interlock on
// then would have both on. The interlock reads such a member back first.
// The relay section scans once every 20 s, so no poll reads the relay back
// within the test: only the interlock's own read-back can see it.

let slave: HeldWriteSlave;
let board: SimulatedBoard;
let gate: Gate;
let timeline: OutputTimeline;

before(async () => {
  board = new SimulatedBoard(builtinModels.get('01')!);
  slave = await startHeldWriteSlave({ store: board, hold: false });
  gate = await startGate(`${stillBoardYaml()}  RELAYS:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${slave.port}
    timeout: 500
    retries: 0
    devices:
      2:
        model: "01"
        slave-id: 1
        scan_frequency: 0.05
interlocks:
  - outputs: [ro/2_01, ro/2_02, do/1_01]
`);
  timeline = new OutputTimeline([board, gate.board], [RELAY_01(2, 1, 0), RELAY_01(2, 2, 0), { ...BRAIN_DO(1), board: 1 }]);
});

after(async () => {
  timeline?.stop();
  await gate?.close();
  await slave?.close();
});

/** Samples at the boards with two members on together. */
function bothOn(): number {
  return timeline.samples.filter((sample) => sample.on.filter(Boolean).length > 1).length;
}

async function lostOn(circuit: string): Promise<void> {
  slave.swallowNextWrite();
  const lost = await postForm(`${gate.baseUrl}/rest/ro/${circuit}`, { value: '1' });
  assert.equal(lost.status, 504, JSON.stringify(lost.body));
  assert.equal(timeline.isOn(`ro/${circuit}`), true, 'the board switched it anyway');
  assert.equal((await get(`${gate.baseUrl}/rest/ro/${circuit}`)).body['value'], 0, "iogate's copy still says off");
}

test("a member whose write lost its reply is read back before the other goes on: refused, never both on at the board", async () => {
  await lostOn('2_01');
  const other = await postForm(`${gate.baseUrl}/rest/ro/2_02`, { value: '1' });
  assert.equal(other.status, 409, JSON.stringify(other.body));
  assert.match(String(other.body['errors']?.['InterlockError']), /ro 2_02 stays off: ro 2_01 is on and interlocked/);
  assert.equal(bothOn(), 0, 'never both on at the board');
  assert.equal((await get(`${gate.baseUrl}/rest/ro/2_01`)).body['value'], 1, 'read back');
  assert.equal((await postForm(`${gate.baseUrl}/rest/ro/2_01`, { value: '0' })).status, 200);
});

test('the same for a raw register write that would switch another member on', async () => {
  await lostOn('2_02');
  // do 1_01's bit in the brain's mirror register, decided before anything is written.
  const writes = gate.board.writes;
  const other = await postForm(`${gate.baseUrl}/rest/register/1_1`, { value: '1' });
  assert.equal(other.status, 409, JSON.stringify(other.body));
  assert.match(String(other.body['errors']?.['InterlockError']), /do 1_01 stays off: ro 2_02 is on and interlocked/);
  assert.equal(gate.board.writes, writes, 'nothing written');
  assert.equal(bothOn(), 0, 'never two on at the boards');
});
