import type { DoFeature } from '../../boards/model.js';
import { bitOf } from './bits.js';
import type { DeviceState } from '../device.js';
import { ValidationError, binary, decimal, oneOf, type FieldSpec } from '../fields.js';
import { hardwareDuty, hardwareFrequency, hardwareTimer, softwareFrequency, softwareTimer } from './pwm.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

interface DoWrite {
  value: 0 | 1;
  /** Seconds until the output returns to the opposite state. */
  timeout: number;
  pwm_freq: number;
  pwm_duty: number;
  mode: string;
}

export class DigitalOutput extends SlaveDevice<DoWrite> {
  readonly type = 'do' as const;
  protected readonly writeSpec: FieldSpec<DoWrite>;
  private revertTimer: NodeJS.Timeout | undefined;
  /** What the pending revert (EVOK's `timeout`) will write. */
  private revertTo: 0 | 1 | undefined;
  private readonly hardwarePwm: boolean;
  protected override readonly floatFields: ReadonlySet<string> = new Set(['pwm_freq', 'pwm_duty']);

  /**
   * @param timerGroup every DO of this slave driven by the same PWM timer
   *   (this one included): a frequency change re-scales their duty registers.
   */
  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: DoFeature,
    private readonly index: number,
    private readonly globalId: number,
    private readonly timerGroup: DigitalOutput[],
    private readonly log: (message: string) => void,
  ) {
    super(circuit, slave);
    this.hardwarePwm = feature.pwm_c_reg !== undefined && feature.pwm_ps_reg !== undefined;
    this.writeSpec = {
      value: binary,
      timeout: decimal(0, 86_400 * 365, { exclusiveMin: true }),
      pwm_freq: decimal(0, this.hardwarePwm ? 48_000_000 : 2000, { exclusiveMin: true }),
      pwm_duty: decimal(0, 100),
      mode: oneOf(feature.modes),
    };
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, pwm_reg, pwm_c_reg, pwm_ps_reg, pwm_preset_reg, pwm_cpres_reg } = this.feature;
    return [val_reg, pwm_reg + this.index, pwm_c_reg, pwm_ps_reg, pwm_preset_reg, pwm_cpres_reg]
      .filter((address): address is number => address !== undefined)
      .map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const duty = this.rawDuty();
    return {
      dev: 'do',
      circuit: this.circuit,
      value: bitOf(this.slave.cache, this.feature.val_reg, this.index),
      pending: this.revertTimer !== undefined,
      mode: duty === null ? null : duty === 0 ? 'Simple' : 'PWM',
      modes: this.feature.modes,
      pwm_freq: this.frequency(),
      pwm_duty: this.dutyPercent(duty),
      glob_dev_id: this.globalId,
    };
  }

  /**
   * EVOK's types: the hardware timer's frequency is computed, so always a
   * float (`4800.0`), and so is a duty other than 0; the software PWM's
   * presets (1000, 100) and its duty are ints, a custom frequency a float.
   */
  protected override isFloat(field: string, value: unknown): boolean {
    if (typeof value !== 'number') return false;
    if (field === 'pwm_freq') return this.hardwarePwm || (value !== 1000 && value !== 100);
    return field === 'pwm_duty' && this.hardwarePwm && value !== 0;
  }

  private rawDuty(): number | null {
    return this.slave.cache.get('holding', this.feature.pwm_reg + this.index);
  }

  /** Timer cycle length in counts (hardware PWM), or null before the first poll. */
  private cycle(): number | null {
    const raw = this.slave.cache.get('holding', this.feature.pwm_c_reg!);
    return raw === null ? null : raw + 1;
  }

  private frequency(): number | null {
    const { cache } = this.slave;
    const f = this.feature;
    if (this.hardwarePwm) {
      const cycle = cache.get('holding', f.pwm_c_reg!);
      const prescale = cache.get('holding', f.pwm_ps_reg!);
      return cycle === null || prescale === null ? null : hardwareFrequency(cycle, prescale);
    }
    const preset = cache.get('holding', f.pwm_preset_reg!);
    const prescaler = cache.get('holding', f.pwm_cpres_reg!);
    return preset === null || prescaler === null ? null : softwareFrequency(preset, prescaler);
  }

  private dutyPercent(duty: number | null): number | null {
    if (duty === null) return null;
    if (!this.hardwarePwm) return duty;
    const cycle = this.cycle();
    return cycle === null ? null : hardwareDuty(duty, cycle);
  }

  override prepareWrite(raw: Readonly<Record<string, unknown>>): () => Promise<void> {
    const action = super.prepareWrite(raw);
    const params = raw as Partial<Record<keyof DoWrite, unknown>>;
    if (params.value !== undefined && params.pwm_duty !== undefined) {
      const value = binary(params.value, 'value');
      const duty = decimal(0, 100)(params.pwm_duty, 'pwm_duty');
      if (!((value === 1 && duty === 100) || (value === 0 && duty === 0))) {
        throw new ValidationError('Set value conflict: Cannot set both value and pwm_duty at once.');
      }
    }
    if (params.timeout !== undefined && params.value === undefined) {
      throw new ValidationError('timeout: needs a value to set before the timeout reverts it');
    }
    if (params.pwm_freq !== undefined) this.timerSettings(decimal(0, Infinity)(params.pwm_freq, 'pwm_freq'));
    return action;
  }

  private timerSettings(hz: number): Array<[number, number]> {
    const f = this.feature;
    if (this.hardwarePwm) {
      const { cycle, prescale } = hardwareTimer(hz);
      return [
        [f.pwm_c_reg!, cycle - 1],
        [f.pwm_ps_reg!, prescale - 1],
      ];
    }
    const { preset, prescaler } = softwareTimer(hz);
    return prescaler === undefined
      ? [[f.pwm_preset_reg!, preset]]
      : [
          [f.pwm_preset_reg!, preset],
          [f.pwm_cpres_reg!, prescaler],
        ];
  }

  protected async apply(params: Partial<DoWrite>): Promise<void> {
    this.cancelRevert();
    if (params.pwm_freq !== undefined) await this.setFrequency(params.pwm_freq);
    if (params.value !== undefined) {
      await this.setValue(params.value);
      if (params.timeout !== undefined) this.scheduleRevert(params.value, params.timeout);
    } else if (params.pwm_duty !== undefined) {
      await this.setDuty(params.pwm_duty);
    } else if (params.mode === 'Simple' && this.rawDuty()) {
      await this.slave.writeRegister(this.feature.pwm_reg + this.index, 0);
    }
  }

  /** Reads the value and duty registers afresh, when a failed write left the state in doubt. */
  async readBack(): Promise<void> {
    await this.slave.readRegisters('holding', this.feature.val_reg, 1);
    await this.slave.readRegisters('holding', this.feature.pwm_reg + this.index, 1);
    this.slave.refreshAfterWrite(this);
  }

  private async setValue(value: 0 | 1): Promise<void> {
    const { val_coil, val_reg, pwm_reg } = this.feature;
    await this.slave.writeCoil(val_coil + this.index, value === 1, { register: val_reg, bit: this.index % 16 });
    if (this.rawDuty()) await this.slave.writeRegister(pwm_reg + this.index, 0);
  }

  private async setDuty(percent: number): Promise<void> {
    const { val_coil, val_reg, pwm_reg } = this.feature;
    if (bitOf(this.slave.cache, val_reg, this.index)) {
      await this.slave.writeCoil(val_coil + this.index, false, { register: val_reg, bit: this.index % 16 });
    }
    await this.slave.writeRegister(pwm_reg + this.index, this.dutyRegister(percent));
  }

  private dutyRegister(percent: number): number {
    if (!this.hardwarePwm) return Math.round(percent);
    return Math.round(((this.cycle() ?? 0) * percent) / 100);
  }

  private async setFrequency(hz: number): Promise<void> {
    const keep = this.timerGroup
      .filter((output) => output !== this && output.rawDuty())
      .map((output) => ({ output, percent: output.dutyPercent(output.rawDuty()) ?? 0 }));
    for (const [register, value] of this.timerSettings(hz)) await this.slave.writeRegister(register, value);
    // Duty registers count timer steps, so they must follow the new cycle length.
    if (this.hardwarePwm) {
      for (const { output, percent } of keep) {
        await this.slave.writeRegister(output.feature.pwm_reg + output.index, output.dutyRegister(percent));
      }
    }
  }

  /**
   * Drops the pending revert (a reload is taking this device out): what it
   * would have written, if one was pending. Its timer would otherwise write to
   * a stopped bus.
   */
  dropTimedRevert(): 0 | 1 | undefined {
    const pending = this.revertTimer === undefined ? undefined : this.revertTo;
    this.cancelRevert();
    return pending;
  }

  private scheduleRevert(value: 0 | 1, seconds: number): void {
    this.revertTo = value === 1 ? 0 : 1;
    this.revertTimer = setTimeout(() => {
      this.revertTimer = undefined;
      this.setValue(value === 1 ? 0 : 1)
        .catch((error: Error) => this.log(`do ${this.circuit}: timed revert failed: ${error.message}`))
        .finally(() => this.slave.refreshAll());
    }, seconds * 1000);
    this.revertTimer.unref();
  }

  private cancelRevert(): void {
    clearTimeout(this.revertTimer);
    this.revertTimer = undefined;
  }
}
