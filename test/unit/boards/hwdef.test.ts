import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HwDefinitionError, loadHwDefinitionDir, parseHwDefinition } from '../../../src/boards/hwdef.js';
import { tempDir } from '../../helpers/temp-dir.js';

const fixtures = fileURLToPath(new URL('../../../fixtures/hw/', import.meta.url));
const v3Reference = fileURLToPath(new URL('../../../fixtures/hw-definitions/v3/', import.meta.url));

/** Asserts that parsing `text` fails and returns the error for closer inspection. */
function parseError(text: string, file = 'USER.yaml'): HwDefinitionError {
  try {
    parseHwDefinition('USER', text, file);
  } catch (err) {
    assert.ok(err instanceof HwDefinitionError, `expected HwDefinitionError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the definition to be rejected');
}

const oneBlock = 'modbus_register_blocks:\n  - {start_reg: 0, count: 3, frequency: 1}\n';

describe('parseHwDefinition', () => {
  test('reads the example meter: float32 data points in input registers, raw holding registers', () => {
    const { model, warnings } = parseHwDefinition('METER1', readFileSync(`${fixtures}METER1.yaml`, 'utf8'));
    assert.deepEqual(warnings, []);
    assert.deepEqual(model, {
      name: 'METER1',
      blocks: [
        { start_reg: 0, count: 8, frequency: 50, type: 'input' },
        { start_reg: 342, count: 2, frequency: 500, type: 'input' },
        { start_reg: 20, count: 2, frequency: 500, type: 'holding' },
      ],
      features: [
        { type: 'DATA_POINT', count: 1, name: 'voltage', value_reg: 0, datatype: 'float32', unit: 'V', reg_type: 'input' },
        { type: 'DATA_POINT', count: 1, name: 'current', value_reg: 6, datatype: 'float32', unit: 'A', reg_type: 'input' },
        { type: 'DATA_POINT', count: 1, name: 'energy', value_reg: 342, datatype: 'float32', factor: 1000, unit: 'Wh', reg_type: 'input' },
        { type: 'REGISTER', count: 2, start_reg: 20 },
      ],
    });
  });

  test('a missing required key names file, line, key path and what was expected', () => {
    const err = parseError(
      `${oneBlock}modbus_features:
  - type: RO
    val_reg: 1
    val_coil: 0
  - type: DI
    count: 4
    modes: [Simple]
    val_reg: 0
    deboun_reg: 1010
`,
      '/etc/iogate/hw/USER.yaml',
    );
    assert.equal(err.file, '/etc/iogate/hw/USER.yaml');
    assert.equal(err.line, 7);
    assert.equal(err.keyPath, 'modbus_features[1].counter_reg');
    assert.equal(
      err.message,
      '/etc/iogate/hw/USER.yaml:7: modbus_features[1].counter_reg: missing; a DI feature needs it (a register or coil address, an integer 0–65535)',
    );
  });

  test('a wrong value points at its own line', () => {
    const err = parseError(`${oneBlock}modbus_features:
  - type: LED
    count: 4
    val_reg: twenty
    val_coil: 8
`);
    assert.equal(err.message, 'USER.yaml:6: modbus_features[0].val_reg: expected a register or coil address, an integer 0–65535, got "twenty"');
  });

  test('required keys per feature type (evok-api §13.3)', () => {
    const cases: [string, string][] = [
      ['type: WD\n    val_reg: 2\n    timeout_reg: 1008\n    reset_coil: 1002', 'nv_sav_coil'],
      ['type: DI\n    val_reg: 0\n    counter_reg: 3\n    deboun_reg: 1010', 'modes'],
      ['type: AI\n    val_reg: 6', 'modes'],
      ['type: AO\n    modes: {Voltage: {unit: V}}', 'val_reg'],
      ['type: BAO\n    val_reg: 3000', 'res_val_reg'],
      ['type: REGISTER\n    val_reg: 0', 'start_reg'],
      ['type: DATA_POINT\n    name: x', 'value_reg'],
      ['type: NV_SAVE', 'val_coil'],
      ['val_reg: 0', 'type'],
      ['type: DO\n    count: 4\n    modes: [Simple]\n    val_reg: 1\n    val_coil: 0\n    pwm_reg: 16', 'pwm_ps_reg'],
      ['type: DO\n    modes: [Simple]\n    val_reg: 1\n    val_coil: 0\n    pwm_reg: 16\n    pwm_ps_reg: 1017', 'pwm_c_reg'],
    ];
    for (const [feature, key] of cases) {
      const err = parseError(`${oneBlock}modbus_features:\n  - ${feature}\n`);
      assert.equal(err.keyPath, `modbus_features[0].${key}`, feature);
      assert.equal(err.line, 4, feature);
      assert.match(err.detail, /^missing/, feature);
    }
  });

  test('blocks: the list and start_reg, count, frequency are required', () => {
    assert.equal(parseError('modbus_features: []\n').keyPath, 'modbus_register_blocks');
    const err = parseError('modbus_register_blocks:\n  - start_reg: 0\n    count: 2\n');
    assert.equal(err.message, 'USER.yaml:2: modbus_register_blocks[0].frequency: missing; a register block needs it (a positive integer)');
    assert.equal(parseError('modbus_register_blocks:\n  - {start_reg: 0, count: 2, frequency: 1, type: coil}\n').keyPath, 'modbus_register_blocks[0].type');
    assert.match(parseError('modbus_register_blocks:\n  - {start_reg: 0, count: 126, frequency: 1}\n').message, /at most 125 registers/);
  });

  test('AI/AO modes must be the v3 mapping, not the v2 list', () => {
    const err = parseError(`${oneBlock}modbus_features:\n  - type: AI\n    val_reg: 6\n    modes: [Voltage, Current]\n`);
    assert.equal(err.keyPath, 'modbus_features[0].modes');
    assert.equal(err.line, 6);
    assert.match(err.detail, /expected a mapping of mode name to \{value, unit, range\}, got a list/);
    const badRange = parseError(`${oneBlock}modbus_features:\n  - type: AO\n    val_reg: 2\n    modes:\n      Voltage: {unit: V, range: [0]}\n`);
    assert.equal(badRange.keyPath, 'modbus_features[0].modes.Voltage.range');
  });

  test('invalid YAML reports its line', () => {
    const err = parseError('modbus_register_blocks:\n  - start_reg: 0\n   count: [1\n');
    assert.equal(err.file, 'USER.yaml');
    assert.ok(err.line !== undefined && err.line >= 2, `line ${err.line}`);
    assert.match(err.message, /invalid YAML/);
  });

  test('defaults: block type holding, feature count 1; AI/AO modes and transformation kept', () => {
    const { model } = parseHwDefinition(
      'USER',
      `${oneBlock}modbus_features:
  - {type: RO, val_reg: 1, val_coil: 0}
  - type: AI
    val_reg: 6
    mode_reg: 1019
    modes:
      Disabled:
      Counter:
        value: 7
        transformation: {datatype: uint32, wordorder: big, decimals: 0}
`,
    );
    assert.equal(model.blocks[0]!.type, 'holding');
    assert.deepEqual(model.features, [
      { type: 'RO', count: 1, val_reg: 1, val_coil: 0 },
      {
        type: 'AI',
        count: 1,
        val_reg: 6,
        mode_reg: 1019,
        modes: { Disabled: {}, Counter: { value: 7, transformation: { datatype: 'uint32', wordorder: 'big', decimals: 0 } } },
      },
    ]);
  });

  test('v2-only keys and the top-level type are ignored without warnings', () => {
    const { model, warnings } = parseHwDefinition(
      'L1',
      `type: L1
modbus_register_blocks:
  - {board_index: 1, start_reg: 0, count: 3, frequency: 1}
modbus_features:
  - type: RO
    major_group: 1
    modes: [Simple]
    val_reg: 1
    val_coil: 0
  - type: DI
    major_group: 1
    count: 2
    modes: [Simple]
    min_v: 5
    max_v: 24
    val_reg: 0
    counter_reg: 3
    deboun_reg: 1010
    nv_save_coil: 1003
`,
    );
    assert.deepEqual(warnings, []);
    assert.deepEqual(model, {
      name: 'L1',
      blocks: [{ start_reg: 0, count: 3, frequency: 1, type: 'holding' }],
      features: [
        { type: 'RO', count: 1, val_reg: 1, val_coil: 0 },
        { type: 'DI', count: 2, modes: ['Simple'], val_reg: 0, counter_reg: 3, deboun_reg: 1010 },
      ],
    });
  });

  test('unknown feature types become warnings with a location; the rest is kept', () => {
    const { model, warnings } = parseHwDefinition(
      'USER',
      `${oneBlock}modbus_features:
  - {type: UNIT_REGISTER, value_reg: 0}
  - {type: RO, val_reg: 1, val_coil: 0}
  - {type: FANCY, x: 1}
`,
    );
    assert.deepEqual(warnings, [
      'USER.yaml:4: modbus_features[0]: unknown feature type UNIT_REGISTER, ignored (EVOK 3 renamed it DATA_POINT)',
      'USER.yaml:6: modbus_features[2]: unknown feature type FANCY, ignored',
    ]);
    assert.deepEqual(model.features, [{ type: 'RO', count: 1, val_reg: 1, val_coil: 0 }]);
  });

  test('an empty file is an error when parsed on its own', () => {
    assert.match(parseError('# nothing here\n').message, /USER\.yaml: the file is empty/);
  });

  test('every current Unipi data file loads without warnings', () => {
    for (const file of readdirSync(`${v3Reference}unipi-data-1.1`)) {
      const { warnings } = parseHwDefinition(file.slice(0, -5), readFileSync(`${v3Reference}unipi-data-1.1/${file}`, 'utf8'), file);
      assert.deepEqual(warnings, [], file);
    }
  });

  test('the early EVOK 3 xS40 file is rejected: its REGISTER features say val_reg, not start_reg', () => {
    const err = parseError(readFileSync(`${v3Reference}evok-repo-2024-03/xS40.yaml`, 'utf8'), 'xS40.yaml');
    assert.deepEqual([err.file, err.line, err.keyPath], ['xS40.yaml', 50, 'modbus_features[4].start_reg']);
  });
});

describe('loadHwDefinitionDir', () => {
  test('loads the fixture directory by file name', () => {
    const { models, warnings } = loadHwDefinitionDir(fixtures);
    assert.deepEqual([...models.keys()], ['METER1']);
    assert.deepEqual(warnings, []);
  });

  test('only *.yaml files directly inside; empty files skipped; warnings collected', () => {
    const dir = tempDir('iogate-hw-');
    try {
      writeFileSync(join(dir, 'A.yaml'), `${oneBlock}modbus_features:\n  - {type: UART, conf_reg: 1}\n`);
      writeFileSync(join(dir, 'EMPTY.yaml'), '# placeholder\n');
      writeFileSync(join(dir, 'notes.txt'), 'not a definition');
      writeFileSync(join(dir, 'B.yml'), 'not: loaded');
      mkdirSync(join(dir, 'sub'));
      writeFileSync(join(dir, 'sub', 'C.yaml'), oneBlock);
      const { models, warnings } = loadHwDefinitionDir(dir);
      assert.deepEqual([...models.keys()], ['A']);
      assert.equal(warnings.length, 1);
      assert.ok(warnings[0]!.startsWith(`${join(dir, 'A.yaml')}:4: modbus_features[0]: unknown feature type UART`));
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  test('an invalid file throws with its full path', () => {
    const dir = tempDir('iogate-hw-');
    try {
      writeFileSync(join(dir, 'BAD.yaml'), 'modbus_features: []\n');
      assert.throws(() => loadHwDefinitionDir(dir), (err: unknown) => err instanceof HwDefinitionError && err.file === join(dir, 'BAD.yaml'));
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  test('a directory that does not exist contributes nothing', () => {
    assert.deepEqual(loadHwDefinitionDir(join(tmpdir(), 'iogate-no-such-dir')), { models: new Map(), warnings: [] });
  });
});
