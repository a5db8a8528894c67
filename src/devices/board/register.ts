import type { RegisterSpace } from '../../boards/model.js';
import type { DeviceState } from '../device.js';
import { ValidationError, integer, type FieldSpec } from '../fields.js';
import { registerWriteMoves, type MovesOutputs, type OutputMoves } from '../output-moves.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// Raw Modbus register `register`: circuit `<slave>_<address>` for a holding
// register, `<slave>_<address>_inp` for an input register. Holding registers
// are written with FC6; input registers cannot be written at all. A holding
// register may mirror outputs (a relay's bit, a DO's PWM duty) or hold a
// DirectSwitch setting: outputMoves says so, and the control layer then takes
// the write over (see docs/outputs.md, "Raw writes").

interface RegisterWrite {
  value: number;
}

export class RawRegister extends SlaveDevice<RegisterWrite> implements MovesOutputs {
  readonly type = 'register' as const;
  /** Not pushed to listeners, as in EVOK: raw registers would repeat every other device's changes. */
  override readonly eventCapable = false;
  protected readonly writeSpec: FieldSpec<RegisterWrite> = { value: integer(0, 65535) };

  constructor(
    slave: SlaveUnit,
    private readonly space: RegisterSpace,
    private readonly address: number,
  ) {
    super(`${slave.name}_${address}${space === 'input' ? '_inp' : ''}`, slave);
  }

  override prepareWrite(raw: Readonly<Record<string, unknown>>): () => Promise<void> {
    // EVOK wrote input-register circuits to the holding register of the same number.
    if (this.space === 'input' && 'value' in raw) throw new ValidationError(`value: input register ${this.circuit} is read-only`);
    return super.prepareWrite(raw);
  }

  outputMoves(raw: Readonly<Record<string, unknown>>): OutputMoves | undefined {
    if (this.space !== 'holding' || raw['value'] === undefined) return undefined;
    let value: number;
    try {
      value = this.writeSpec.value(raw['value'], 'value');
    } catch {
      return undefined;
    }
    const moves = registerWriteMoves(this.slave, this.address, [value]);
    return moves.moves.length + moves.handovers.length > 0 ? moves : undefined;
  }

  registers(): Array<{ space: RegisterSpace; address: number }> {
    return [{ space: this.space, address: this.address }];
  }

  protected decode(): DeviceState {
    return { dev: 'register', circuit: this.circuit, value: this.slave.cache.get(this.space, this.address) };
  }

  protected async apply(params: Partial<RegisterWrite>): Promise<void> {
    if (params.value !== undefined) await this.slave.writeRegister(this.address, params.value);
  }
}
