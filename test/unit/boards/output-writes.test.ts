import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { builtinModels } from '../../../src/boards/builtin/index.js';
import type { BoardModel } from '../../../src/boards/model.js';
import { coilWriteEffects, directSwitchOutput, registerWriteEffects, type OutputEffect } from '../../../src/boards/output-writes.js';

// Which outputs a raw register or coil write moves, read from the register map.

const board = (name: string): BoardModel => builtinModels.get(name)!;

/** `do#0=1`: feature type, channel, and what it becomes. */
function brief(effects: OutputEffect[]): string[] {
  return effects.map((effect) => {
    switch (effect.kind) {
      case 'value':
        return `${effect.output.feature.type}#${effect.output.index}=${effect.on ? 1 : 0}`;
      case 'duty':
        return `${effect.output.feature.type}#${effect.output.index} duty ${effect.raw}`;
      case 'direct-switch':
        return `DI#${effect.index} ${effect.setting}=${effect.set ? 1 : 0} → ${effect.output ? `${effect.output.feature.type}#${effect.output.index}` : 'none'}`;
    }
  });
}

describe('registerWriteEffects', () => {
  test("brain section: register 1 mirrors the four DOs, 16…19 are their duties, 20 the LEDs' mirror", () => {
    assert.deepEqual(brief(registerWriteEffects(board('00'), 1, [0b0101])), ['DO#0=1', 'DO#1=0', 'DO#2=1', 'DO#3=0']);
    assert.deepEqual(brief(registerWriteEffects(board('00'), 17, [400])), ['DO#1 duty 400']);
    assert.deepEqual(brief(registerWriteEffects(board('00'), 20, [0b1000])), ['LED#0=0', 'LED#1=0', 'LED#2=0', 'LED#3=1']);
    // FC16 over both: every register's effects, in order.
    assert.equal(registerWriteEffects(board('00'), 0, [0, 3]).length, 4);
  });

  test('registers that mirror no output move nothing', () => {
    assert.deepEqual(registerWriteEffects(board('00'), 1010, [50]), []);
    assert.deepEqual(registerWriteEffects(board('01'), 0, [0xff]), [], 'the inputs register');
  });

  test('07: 28 relays in two registers', () => {
    assert.equal(registerWriteEffects(board('07'), 0, [0xffff]).length, 16);
    const second = registerWriteEffects(board('07'), 1, [1]);
    assert.equal(second.length, 12);
    assert.deepEqual(brief(second).slice(0, 2), ['RO#0=1', 'RO#1=0']);
  });

  test('DirectSwitch registers: enable, polarity, toggle of each input, with the output it drives', () => {
    const enable = brief(registerWriteEffects(board('00'), 1014, [0b10]));
    assert.deepEqual(enable, ['DI#0 enable=0 → DO#0', 'DI#1 enable=1 → DO#1', 'DI#2 enable=0 → DO#2', 'DI#3 enable=0 → DO#3']);
    assert.equal(brief(registerWriteEffects(board('01'), 1019, [1]))[0], 'DI#0 polarity=1 → RO#0');
    assert.equal(brief(registerWriteEffects(board('01'), 1020, [1]))[0], 'DI#0 toggle=1 → RO#0');
  });
});

describe('directSwitchOutput', () => {
  test('input i drives output i of the first DO or RO group; inputs beyond the outputs drive nothing', () => {
    const sections = board('08');
    const inputs = sections.features.find((feature) => feature.type === 'DI');
    assert.ok(inputs?.type === 'DI');
    assert.equal(directSwitchOutput(sections, inputs, 13)?.index, 13);
    assert.equal(directSwitchOutput(sections, inputs, 14), undefined, 'DI 15 of 16, 14 relays');
    const unipi = board('UNIPI11');
    const plain = unipi.features.find((feature) => feature.type === 'DI');
    assert.ok(plain?.type === 'DI');
    assert.equal(directSwitchOutput(unipi, plain, 0), undefined, 'no DirectSwitch');
  });
});

describe('coilWriteEffects', () => {
  test('output coils move their output; action coils (NV save, watchdog reset, 1-Wire power) none', () => {
    assert.deepEqual(brief(coilWriteEffects(board('00'), 2, [true, false])), ['DO#2=1', 'DO#3=0']);
    assert.deepEqual(brief(coilWriteEffects(board('00'), 8, [true])), ['LED#0=1']);
    assert.deepEqual(coilWriteEffects(board('00'), 1001, [true, true, true]), []);
    assert.deepEqual(brief(coilWriteEffects(board('07'), 27, [true])), ['RO#11=1']);
  });
});
