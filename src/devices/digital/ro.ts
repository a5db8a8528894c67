import { keywordRefusal, type UnknownField } from '../fields.js';
import { CoilOutput } from './coil-output.js';

/** Relay output `ro`: `{dev, circuit, value}`; writes `value`. */
export class RelayOutput extends CoilOutput {
  readonly type = 'ro' as const;
  /** EVOK had no schema for `ro`: its `set()` refused an unknown field. */
  protected override readonly unknownField: UnknownField = keywordRefusal;
}
