// Register maps of the Unipi IAQ indoor-air-quality sensors. Every value is an
// IEEE float32 (high word first) in input registers.
//
// Each data point says `reg_type: 'input'` although Unipi's files leave it out:
// their blocks are input blocks, but since EVOK 3.0.5 a data point without
// reg_type is looked up among holding registers (EVOK#175), so the unchanged
// files yield no values. Saying it explicitly makes the table work as intended.

import type { BoardModel, DataPointFeature } from '../model.js';
import { block } from './parts.js';

function inputFloat(name: string, value_reg: number, unit: string): DataPointFeature {
  return { type: 'DATA_POINT', name, count: 1, value_reg, unit, datatype: 'float32', reg_type: 'input' };
}

const climate = [
  inputFloat('temperature', 0, '°C'),
  inputFloat('rel_humid', 6, '%'),
  inputFloat('dew_point', 8, '°C'),
  inputFloat('abs_humid', 10, '%'),
];
const co2 = inputFloat('CO2', 18, 'ppm');
const vocLightPressure = [
  inputFloat('VOC_index', 26, 'N/A'),
  inputFloat('VOC_precision', 28, 'N/A'),
  inputFloat('VOC_CO2_eq', 34, 'ppm'),
  inputFloat('ambient_light', 42, 'lux'),
  inputFloat('atm_pressure', 76, 'hPa'),
  inputFloat('uptime', 84, 'sec'),
];

/**
 * Two polls: the fast-changing values every second, pressure and uptime every
 * ten seconds (at the default 50 Hz scan rate).
 */
function iaqBlocks() {
  return [block(0, 44, 50, 'input'), block(76, 10, 500, 'input')];
}

export const iaqTH: BoardModel = {
  name: 'IAQ-TH',
  description: 'IAQ sensor RW-TH / RLW-TH: temperature, humidity, VOC, pressure, ambient light',
  blocks: iaqBlocks(),
  features: [...climate, ...vocLightPressure],
};

export const iaqTHC: BoardModel = {
  name: 'IAQ-THC',
  description: 'IAQ sensor RW-THC / RLW-THC: temperature, humidity, CO2, VOC, pressure, ambient light',
  blocks: iaqBlocks(),
  features: [...climate, co2, ...vocLightPressure],
};

/**
 * The first IAQ map, from before the TH/THC split: one 86-register input block
 * and every value including CO2. Its file used the EVOK 2 feature name
 * UNIT_REGISTER, which EVOK 3 skips; the same points are DATA_POINTs here.
 */
export const iaq: BoardModel = {
  name: 'IAQ',
  description: 'IAQ sensor (first map, all models): temperature, humidity, CO2, VOC, pressure, ambient light',
  blocks: [block(0, 86, 10, 'input')],
  features: [...climate, co2, ...vocLightPressure],
};

export const iaqSensors: BoardModel[] = [iaq, iaqTH, iaqTHC];
