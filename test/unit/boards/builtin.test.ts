// Cross-checks the hand-written built-in tables against the reference hardware
// definitions, read with our own loader. Everything our tables change on
// purpose is listed in `intendedDeviations`; any other difference fails.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { builtinModels } from '../../../src/boards/builtin/index.js';
import { parseHwDefinition } from '../../../src/boards/hwdef.js';
import type { BoardModel, Feature, RegisterSpace } from '../../../src/boards/model.js';
import { blockOf } from '../../../src/boards/regmap.js';

const v3Reference = fileURLToPath(new URL('../../../fixtures/hw-definitions/v3/', import.meta.url));
const CURRENT = 'unipi-data-1.1';
const EARLY = 'evok-repo-2024-03';

/** Which reference file each built-in is checked against: the current Unipi data where it exists. */
const referenceSet: Record<string, string> = {
  '00': CURRENT,
  '01': CURRENT,
  '07': CURRENT,
  '08': CURRENT,
  '09': CURRENT,
  '0A': CURRENT,
  '0F': CURRENT,
  '13': CURRENT,
  xS10: CURRENT,
  xS11: CURRENT,
  xS30: CURRENT,
  xS40: CURRENT,
  xS50: CURRENT,
  xS51: CURRENT,
  xG18: CURRENT,
  'IAQ-TH': CURRENT,
  'IAQ-THC': CURRENT,
  CUSTOM_MODBUS_DEVICE: CURRENT,
  IAQ: EARLY,
  UNIPI11: EARLY,
  UNIPI11LITE: EARLY,
  'EMO-R8': EARLY,
};

function referenceText(name: string): string {
  return readFileSync(`${v3Reference}${referenceSet[name]}/${name}.yaml`, 'utf8');
}

function setInputRegType(model: BoardModel): void {
  for (const f of model.features) if (f.type === 'DATA_POINT') f.reg_type = 'input';
}

/**
 * Our deliberate departures from the reference files. 07 is not here: the
 * current file already carries start_index on both relay groups; the
 * difference from EVOK is in how RO circuits are numbered (tested below).
 */
const intendedDeviations: Record<string, { text?: (t: string) => string; model?: (m: BoardModel) => void }> = {
  // The watchdog status (register 2) lies outside the file's first block (0–1).
  '0A': { model: (m) => void (m.blocks[0]!.count = 3) },
  // EVOK#175: data points in input blocks need reg_type input since EVOK 3.0.5.
  'IAQ-TH': { model: setInputRegType },
  'IAQ-THC': { model: setInputRegType },
  // The early file still used the EVOK 2 name UNIT_REGISTER, which EVOK 3 skips.
  IAQ: { text: (t) => t.replace(/type(\s*):(\s*)UNIT_REGISTER/g, 'type$1:$2DATA_POINT'), model: setInputRegType },
};

/** Boards whose reference already lists its raw registers; every other one gets one REGISTER per holding block. */
const hasOwnRegisterFeatures = new Set(['CUSTOM_MODBUS_DEVICE']);

function expectedModel(name: string): BoardModel {
  const deviation = intendedDeviations[name] ?? {};
  const text = deviation.text ? deviation.text(referenceText(name)) : referenceText(name);
  const { model } = parseHwDefinition(name, text);
  deviation.model?.(model);
  if (!hasOwnRegisterFeatures.has(name)) {
    for (const b of model.blocks) {
      if (b.type === 'holding') model.features.push({ type: 'REGISTER', count: b.count, start_reg: b.start_reg });
    }
  }
  return model;
}

test('every reference board has a built-in model and nothing else is built in', () => {
  assert.deepEqual([...builtinModels.keys()].sort(), Object.keys(referenceSet).sort());
});

describe('built-in tables equal the reference files plus the intended deviations', () => {
  for (const [name, model] of builtinModels) {
    test(name, () => {
      const { description, ...table } = model;
      assert.ok(description && description.length > 10, 'has a description');
      assert.deepEqual(table, expectedModel(name));
    });
  }
});

/** Circuit suffixes per EVOK device type, numbered as iogate numbers them (start_index honoured). */
function circuits(model: BoardModel): Map<string, string[]> {
  const byType = new Map<string, string[]>();
  const add = (type: string, id: string) => byType.set(type, [...(byType.get(type) ?? []), id]);
  const ioType: Partial<Record<Feature['type'], string>> = {
    DI: 'di', RO: 'ro', DO: 'do', LED: 'led', AI: 'ai', AO: 'ao', BAO: 'ao', WD: 'wd',
  };
  for (const f of model.features) {
    if (f.type === 'REGISTER') {
      for (let i = 0; i < f.count; i++) add('register', `${f.start_reg + i}${f.reg_type === 'input' ? '_inp' : ''}`);
    } else if (f.type === 'DATA_POINT') {
      for (let i = 0; i < f.count; i++) add('data_point', String(f.value_reg + i));
    } else if ('count' in f) {
      for (let i = 0; i < f.count; i++) add(ioType[f.type]!, String(1 + i + (f.start_index ?? 0)).padStart(2, '0'));
    }
  }
  return byType;
}

/** Circuit counts from the products' data sheets, independent of any register file. */
const expectedCircuitCounts: Record<string, Record<string, number>> = {
  '00': { di: 4, do: 4, ai: 1, ao: 1, led: 4, wd: 1 },
  '01': { di: 8, ro: 8, wd: 1 },
  '07': { ro: 28, wd: 1 },
  '08': { di: 16, ro: 14, wd: 1 },
  '09': { di: 14, ro: 14, wd: 1 },
  '0A': { di: 30, wd: 1 },
  '0F': { di: 6, ro: 5, ai: 4, ao: 4, wd: 1 },
  '13': { di: 4, ro: 5, ai: 4, ao: 4, wd: 1 },
  xS10: { di: 16, ro: 8, led: 4, wd: 1 },
  xS11: { di: 12, ro: 13, led: 3, wd: 1 },
  xS30: { di: 24, led: 4, wd: 1 },
  xS40: { di: 8, ro: 14, led: 4, wd: 1 },
  xS50: { di: 6, ro: 5, ai: 4, ao: 4, wd: 1 },
  xS51: { di: 4, ro: 5, ai: 4, ao: 4, led: 3, wd: 1 },
  xG18: { data_point: 8 },
  IAQ: { data_point: 11 },
  'IAQ-TH': { data_point: 10 },
  'IAQ-THC': { data_point: 11 },
  UNIPI11: { di: 12, ro: 8, ai: 2, ao: 1 },
  UNIPI11LITE: { di: 6, ro: 6 },
  'EMO-R8': { ro: 8 },
  CUSTOM_MODBUS_DEVICE: { register: 26 },
};

describe('circuits: counts per type, numbered 01…n without gaps or duplicates', () => {
  for (const [name, model] of builtinModels) {
    test(name, () => {
      const byType = circuits(model);
      const counts = Object.fromEntries([...byType].filter(([t]) => t !== 'register' || name === 'CUSTOM_MODBUS_DEVICE').map(([t, ids]) => [t, ids.length]));
      assert.deepEqual(counts, expectedCircuitCounts[name]);
      for (const [type, ids] of byType) {
        assert.equal(new Set(ids).size, ids.length, `duplicate ${type} circuits`);
        if (type !== 'register' && type !== 'data_point') {
          assert.deepEqual(ids, ids.map((_, i) => String(i + 1).padStart(2, '0')), `${type} circuits`);
        }
      }
    });
  }
});

test('07: the two relay groups are _01…_16 on register 0 and _17…_28 on register 1 (EVOK#195)', () => {
  const relays = builtinModels.get('07')!.features.filter((f) => f.type === 'RO');
  assert.deepEqual(relays, [
    { type: 'RO', count: 16, val_reg: 0, val_coil: 0, start_index: 0 },
    { type: 'RO', count: 12, val_reg: 1, val_coil: 16, start_index: 16 },
  ]);
  // The early EVOK 3 file had the same registers but no start_index at all.
  const early = parseHwDefinition('07', readFileSync(`${v3Reference}${EARLY}/07.yaml`, 'utf8')).model;
  assert.deepEqual(
    early.features.filter((f) => f.type === 'RO').map(({ count, val_reg, val_coil }) => [count, val_reg, val_coil]),
    [[16, 0, 0], [12, 1, 16]],
  );
});

test('key registers', () => {
  const find = <T extends Feature['type']>(name: string, type: T) =>
    builtinModels.get(name)!.features.find((f): f is Extract<Feature, { type: T }> => f.type === type)!;
  assert.deepEqual(
    [find('00', 'BAO').val_reg, find('00', 'BAO').res_val_reg, find('00', 'BAO').mode_reg, find('00', 'AI').val_reg],
    [3000, 3004, 1019, 3002],
  );
  assert.deepEqual([find('00', 'DO').pwm_reg, find('00', 'DO').pwm_ps_reg, find('00', 'DO').pwm_c_reg], [16, 1017, 1018]);
  assert.deepEqual([find('13', 'DI').direct_reg, find('13', 'DI').polar_reg, find('13', 'DI').toggle_reg], [1014, 1015, 1016]);
  assert.equal(find('0F', 'WD').val_reg, 14);
  assert.equal(find('xG18', 'DATA_POINT').valid_mask_reg, 9);
  assert.equal(find('IAQ-THC', 'DATA_POINT').reg_type, 'input');
  assert.deepEqual(builtinModels.get('00')!.features.at(-1), { type: 'REGISTER', count: 6, start_reg: 3000 });
});

/** Every register span a feature decodes, with the space it is read from. */
function decodedSpans(f: Feature): { what: string; space: RegisterSpace; address: number; count: number }[] {
  const each = (what: string, base: number, n: number, width = 1, space: RegisterSpace = 'holding') =>
    Array.from({ length: n }, (_, i) => ({ what, space, address: base + i * width, count: width }));
  switch (f.type) {
    case 'DI':
      return [
        ...each('value', f.val_reg, 1),
        ...each('counter', f.counter_reg, f.count, 2),
        ...each('debounce', f.deboun_reg, f.count),
        ...[f.direct_reg, f.polar_reg, f.toggle_reg].flatMap((r) => (r === undefined ? [] : each('DirectSwitch', r, 1))),
      ];
    case 'RO':
    case 'LED':
      return each('value', f.val_reg, 1);
    case 'DO':
      return [
        ...each('value', f.val_reg, 1),
        ...each('duty', f.pwm_reg, f.count),
        ...[f.pwm_ps_reg, f.pwm_c_reg, f.pwm_preset_reg, f.pwm_cpres_reg].flatMap((r) => (r === undefined ? [] : each('timer', r, 1))),
      ];
    case 'WD':
      return [...each('status', f.val_reg, f.count), ...each('timeout', f.timeout_reg, f.count)];
    case 'AO':
      return [...each('value', f.val_reg, f.count), ...(f.mode_reg === undefined ? [] : each('mode', f.mode_reg, 1))];
    case 'BAO':
      return [...each('value', f.val_reg, 1, 2), ...each('resistance', f.res_val_reg, 1, 2), ...(f.mode_reg === undefined ? [] : each('mode', f.mode_reg, 1))];
    case 'AI':
      return [...each('value', f.val_reg, f.count, 2), ...(f.mode_reg === undefined ? [] : each('mode', f.mode_reg, f.count))];
    case 'REGISTER':
      return each('register', f.start_reg, f.count, 1, f.reg_type ?? 'holding');
    case 'DATA_POINT':
      return [
        ...each('value', f.value_reg, f.count, f.datatype === 'float32' ? 2 : 1, f.reg_type ?? 'holding'),
        ...(f.valid_mask_reg === undefined ? [] : each('validity', f.valid_mask_reg, 1, 1, f.reg_type ?? 'holding')),
      ];
    case 'OWPOWER':
    case 'NV_SAVE':
      return [];
  }
}

describe('every register a feature decodes is polled, in the right space', () => {
  for (const [name, model] of builtinModels) {
    test(name, () => {
      for (const f of model.features) {
        for (const span of decodedSpans(f)) {
          assert.notEqual(blockOf(model, span.space, span.address, span.count), -1, `${f.type} ${span.what} at ${span.space} ${span.address}`);
        }
      }
    });
  }
});
