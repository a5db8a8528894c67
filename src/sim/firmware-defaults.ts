import type { BoardModel } from '../boards/model.js';
import type { SimulatedBoard } from './simulated-board.js';

// Power-on values a real board reports before anyone configures it, so a
// simulated board looks like hardware: DI debounce 50, a 4800 Hz hardware PWM
// timer (cycle 10000, prescaler 1), the 1000 Hz software PWM preset, and a
// 5000 ms master-watchdog timeout.

export function applyFirmwareDefaults(board: SimulatedBoard, model: BoardModel): void {
  for (const feature of model.features) {
    switch (feature.type) {
      case 'DI':
        for (let i = 0; i < feature.count; i++) board.set('holding', feature.deboun_reg + i, 50);
        break;
      case 'DO':
        if (feature.pwm_c_reg !== undefined) board.set('holding', feature.pwm_c_reg, 9999);
        if (feature.pwm_ps_reg !== undefined) board.set('holding', feature.pwm_ps_reg, 0);
        if (feature.pwm_preset_reg !== undefined) board.set('holding', feature.pwm_preset_reg, 0);
        break;
      case 'WD':
        for (let i = 0; i < feature.count; i++) board.set('holding', feature.timeout_reg + i, 5000);
        break;
    }
  }
}
