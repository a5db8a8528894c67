import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { FaultyLine } from '../../helpers/faulty-line.js';
import { startRig } from '../../helpers/bus-rig.js';

// EVOK#183: a write the slave never confirmed must not be reported as done.
// Timeouts answer 504, exception replies 502, a line that is down 503; in
// each case with EVOK's error envelope and nothing written.

async function rigWithLine() {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  const rig = await startRig([{ link: line, slaves: [{ name: '1', unit: 1, model: brain00, periodMs: 50 }], options: { timeoutMs: 100, retries: 1 } }]);
  await rig.whenState('1', 'online');
  return { line, rig };
}

test('a write that times out answers 504 and writes nothing', async () => {
  const { line, rig } = await rigWithLine();
  try {
    line.silent.add(1);
    const reply = await rig.post('/rest/do/1_01', { value: '1' });
    assert.equal(reply.status, 504);
    const body = JSON.parse(reply.body);
    assert.equal(body.success, false);
    assert.match(body.errors.ModbusIOException, /did not answer within 100 ms; it may or may not have applied the write/, 'the key pymodbus gave EVOK');
    assert.equal(line.boards.get(1)!.get('holding', 1) & 1, 0);
  } finally {
    await rig.stop();
  }
});

test('a write answered with a Modbus exception answers 502', async () => {
  const { line, rig } = await rigWithLine();
  try {
    line.failingFunctions.add(5);
    const reply = await rig.post('/rest/do/1_01', { value: '1' });
    assert.equal(reply.status, 502);
    const body = JSON.parse(reply.body);
    assert.equal(body.success, false);
    assert.match(body.errors.ModbusException, /exception 4/, 'the key pymodbus gave EVOK');
    assert.equal(rig.buses[0]!.unitStats(1).exceptions, 1);
    assert.match((await rig.get('/metrics')).body, /iogate_bus_exceptions_total\{bus="bus1"\} 1/);
  } finally {
    await rig.stop();
  }
});

test('a write while the line is down answers 503 at once and is not replayed later', async () => {
  const { line, rig } = await rigWithLine();
  try {
    line.refuseOpen = true;
    line.vanish();
    const requestsBefore = rig.buses[0]!.stats().requests;
    const reply = await rig.post('/rest/do/1_01', { value: '1' });
    assert.equal(reply.status, 503);
    assert.deepEqual(Object.keys(JSON.parse(reply.body).errors), ['ConnectionException'], 'the key pymodbus gave EVOK');
    assert.equal(rig.buses[0]!.stats().requests, requestsBefore, 'failed at once, without waiting on the line');
    line.refuseOpen = false;
    await rig.whenState('1', 'online');
    await rig.scans('1', 3);
    assert.equal(line.boards.get(1)!.get('holding', 1) & 1, 0, 'the refused write never reached the slave');
  } finally {
    await rig.stop();
  }
});

test('a confirmed write answers 200 with the confirmed state', async () => {
  const { line, rig } = await rigWithLine();
  try {
    const reply = await rig.post('/rest/do/1_01', { value: '1' });
    assert.equal(reply.status, 200);
    assert.equal(JSON.parse(reply.body).result.value, 1);
    assert.equal(line.boards.get(1)!.get('holding', 1) & 1, 1);
  } finally {
    await rig.stop();
  }
});
