import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { builtinModels } from '../../../src/boards/builtin/index.js';
import type { BoardModel } from '../../../src/boards/model.js';
import { blockOf, coilTargets } from '../../../src/boards/regmap.js';
import { findModel, unknownModelProblems } from '../../../src/boards/resolve.js';

const board = (name: string): BoardModel => builtinModels.get(name)!;

describe('coilTargets', () => {
  test('Brain board: DO and LED coils map to bits, service coils to actions', () => {
    const targets = coilTargets(board('00'));
    assert.deepEqual(targets.get(0), { kind: 'bit', reg: 1, bit: 0 });
    assert.deepEqual(targets.get(3), { kind: 'bit', reg: 1, bit: 3 });
    assert.deepEqual(targets.get(8), { kind: 'bit', reg: 20, bit: 0 });
    assert.deepEqual(targets.get(11), { kind: 'bit', reg: 20, bit: 3 });
    assert.deepEqual(targets.get(1001), { kind: 'action', action: 'owpower' });
    assert.deepEqual(targets.get(1002), { kind: 'action', action: 'wd_reset' });
    assert.deepEqual(targets.get(1003), { kind: 'action', action: 'nv_save' });
    assert.equal(targets.get(4), undefined);
    assert.equal(targets.size, 4 + 4 + 3);
  });

  test('07: relay coils 16…27 drive the bits of register 1', () => {
    const targets = coilTargets(board('07'));
    assert.deepEqual(targets.get(15), { kind: 'bit', reg: 0, bit: 15 });
    assert.deepEqual(targets.get(16), { kind: 'bit', reg: 1, bit: 0 });
    assert.deepEqual(targets.get(27), { kind: 'bit', reg: 1, bit: 11 });
    assert.equal(targets.get(28), undefined);
  });

  test('a board without outputs or watchdog has no coils', () => {
    assert.equal(coilTargets(board('IAQ-THC')).size, 0);
  });
});

describe('blockOf', () => {
  test('finds the first block of the space that holds the whole span', () => {
    const brain = board('00');
    assert.equal(blockOf(brain, 'holding', 0), 0);
    assert.equal(blockOf(brain, 'holding', 1), 0);
    assert.equal(blockOf(brain, 'holding', 3002, 2), 5);
    assert.equal(blockOf(brain, 'holding', 3004, 2), 5);
    assert.equal(blockOf(brain, 'holding', 3005, 2), -1, 'past the end of the block');
    assert.equal(blockOf(brain, 'holding', 2), -1, 'in no block');
    assert.equal(blockOf(brain, 'input', 0), -1, 'wrong space');
    assert.equal(blockOf(board('IAQ-TH'), 'input', 84, 2), 1);
  });

  test('a span across two adjacent blocks is not found', () => {
    // CUSTOM_MODBUS_DEVICE polls 500–507 and 508–515 as separate blocks.
    const custom = board('CUSTOM_MODBUS_DEVICE');
    assert.equal(blockOf(custom, 'holding', 507), 1);
    assert.equal(blockOf(custom, 'holding', 508), 2);
    assert.equal(blockOf(custom, 'holding', 507, 2), -1);
  });
});

describe('findModel', () => {
  test('user definitions override built-ins of the same name', () => {
    const mine: BoardModel = { name: 'xS10', blocks: [], features: [] };
    assert.equal(findModel('xS10', new Map([['xS10', mine]])), mine);
    assert.equal(findModel('xS10', new Map()), board('xS10'));
    assert.equal(findModel('NOPE', new Map()), undefined);
  });
});

describe('unknownModelProblems', () => {
  test('names each device whose model no built-in or user map has, with where it was written', () => {
    const mine: BoardModel = { name: 'METER1', blocks: [], features: [] };
    const problems = unknownModelProblems(
      [
        { model: '00', modelAt: 'config.yaml:7: comm_channels.BUS.devices.1.model' },
        { model: 'METER1' },
        { model: 'xS99', modelAt: 'config.yaml:12: comm_channels.BUS.devices.2.model' },
      ],
      new Map([['METER1', mine]]),
    );
    assert.equal(problems.length, 1);
    assert.match(
      problems[0]!,
      /^config\.yaml:12: comm_channels\.BUS\.devices\.2\.model: no board model 'xS99' \(did you mean 'xS10' or 'xS11' or 'xS30'\? board ids: 00, .*; products: S103, .*; from hw_definitions: METER1\)$/,
    );
    // Close in spelling, whatever the case and dashes: a product, a board and a user map.
    const [product] = unknownModelProblems([{ model: 'l-203' }], new Map());
    assert.match(product!, /did you mean 'L203'\?/);
    const [user] = unknownModelProblems([{ model: 'METR1' }], new Map([['METER1', mine]]));
    assert.match(user!, /did you mean 'METER1'\?/);
  });
});
