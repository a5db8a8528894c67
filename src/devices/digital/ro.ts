import { CoilOutput } from './coil-output.js';

/** Relay output `ro`: `{dev, circuit, value}`; writes `value`. */
export class RelayOutput extends CoilOutput {
  readonly type = 'ro' as const;
}
