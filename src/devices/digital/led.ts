import { CoilOutput } from './coil-output.js';

/** User LED `led`: `{dev, circuit, value}`; writes `value`. */
export class UserLed extends CoilOutput {
  readonly type = 'led' as const;
}
