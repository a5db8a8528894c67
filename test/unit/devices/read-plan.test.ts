import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import type { BoardModel, RegisterBlock } from '../../../src/boards/model.js';
import { findModel } from '../../../src/boards/resolve.js';
import { ReadPlan } from '../../../src/devices/slave/read-plan.js';
import { startRig } from '../../helpers/bus-rig.js';
import { FaultyLine } from '../../helpers/faulty-line.js';

// What a slave's scans put on the line: blocks due in the same scan that sit
// back to back in one register space go as one request, so each block keeps
// its freshness with fewer round trips, and a slave that refuses a merged
// read gets its blocks one by one again.

const block = (start_reg: number, count: number, frequency: number, type: RegisterBlock['type'] = 'holding'): RegisterBlock => ({ start_reg, count, frequency, type });
const requests = (plan: ReadPlan, scan: number) => plan.due(scan).map(({ request }) => `${request.fc}:${request.address}+${request.quantity}`);

test('adjacent blocks due in the same scan go as one request; a gap, another space or the 125-register limit keep them apart', () => {
  const plan = new ReadPlan([block(0, 3, 1), block(3, 60, 50), block(63, 70, 50), block(200, 2, 1), block(203, 1, 1), block(0, 4, 1, 'input'), block(4, 4, 1, 'input')]);
  // Every scan: 0-2, 200-201 and 203 (gap at 202), and the input blocks merged.
  assert.deepEqual(requests(plan, 1), ['3:0+3', '3:200+2', '3:203+1', '4:0+8']);
  // Every 50th: 0-2 and 3-62 merge; 63-132 would make 133 registers with them, so it goes alone.
  assert.deepEqual(requests(plan, 50), ['3:0+63', '3:63+70', '3:200+2', '3:203+1', '4:0+8']);
  // The reply of a merged read fills each block from its offset.
  const merged = plan.due(50)[0]!;
  assert.deepEqual([merged.blocks, merged.offsets], [[0, 1], [0, 3]]);
});

test('the built-in boards: each block is read as often as its map says, with fewer requests', () => {
  for (const name of ['00', '0A', '08']) {
    const model = findModel(name, new Map())!;
    const plan = new ReadPlan(model.blocks);
    const cycle = plan.cycle();
    assert.equal(cycle.length, 250, name);
    const perBlock = model.blocks.map(() => 0);
    cycle.forEach((_, scan) => {
      for (const read of plan.due(scan)) for (const index of read.blocks) perBlock[index]!++;
    });
    assert.deepEqual(perBlock, model.blocks.map((b) => 250 / b.frequency), name);
    const unmerged = model.blocks.reduce((sum, b) => sum + 250 / b.frequency, 0);
    assert.ok(cycle.flat().length < unmerged, `${name}: ${cycle.flat().length} requests per cycle, ${unmerged} blocks read`);
  }
});

test('a slave that refuses a merged read gets its blocks one by one, and the block it serves keeps its values', async () => {
  // The map claims registers 0-4 in two blocks; the board serves only 0-1. (Blocks of different
  // sizes: on RTU a late reply to one could otherwise pass for the other's.)
  const claimed: BoardModel = { ...brain00, blocks: [block(0, 2, 1), block(2, 3, 1)] };
  const served: BoardModel = { ...brain00, blocks: [block(0, 2, 1)] };
  const line = new FaultyLine([{ unit: 1, model: served }]);
  line.boards.get(1)!.set('holding', 1, 1234);
  const rig = await startRig([{ link: line, slaves: [{ name: '1', unit: 1, model: claimed }] }]);
  try {
    await rig.afterScanWhen('1', () => rig.slave('1').cache.get('holding', 1) === 1234);
    assert.equal(rig.slave('1').cache.get('holding', 2), null);
    assert.ok(rig.logs.some((line) => /refused a read of registers 0-4 .*reading its 2 blocks one by one/.test(line)), rig.logs.join('\n'));
    // Exceptions are answers: the slave is never taken for gone (on a loaded machine the rig's
    // 50 ms timeouts may make it degraded for a while).
    assert.ok(rig.slave('1').answering, rig.slave('1').state);
  } finally {
    await rig.stop();
  }
});
