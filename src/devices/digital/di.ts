import type { DiFeature } from '../../boards/model.js';
import { directSwitchOutput } from '../../boards/output-writes.js';
import type { MovesOutputs, OutputMoves } from '../output-moves.js';
import { bitOf, uint32LowFirst, withBit } from './bits.js';
import type { DeviceState } from '../device.js';
import { integer, oneOf, truncated, type FieldSpec } from '../fields.js';
import type { CounterTotal } from './counter-total.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

interface DiWrite {
  mode: string;
  ds_mode: string;
  counter_mode: string;
  debounce: number;
  counter: number;
  counter_total: number;
}

/** A DI's never-decreasing total (`counter_total`), when it has one. */
export interface CounterTotalLink {
  counter: CounterTotal;
  /** The total or its raw reading moved: to be saved. */
  changed(): void;
  /** Client writes of `counter` and `counter_total` are logged. */
  log(message: string): void;
}

const COUNTER_MODES = ['Enabled', 'Disabled'];

const DI_SETTINGS: ReadonlySet<string> = new Set(['debounce', 'counter_mode', 'mode', 'ds_mode']);

export class DigitalInput extends SlaveDevice<DiWrite> implements MovesOutputs {
  readonly type = 'di' as const;
  /** EVOK pushes a DI on a new value or count only (its debounce and mode changes are silent). */
  protected override readonly settingFields: ReadonlySet<string> = DI_SETTINGS;
  protected readonly writeSpec: FieldSpec<DiWrite>;
  /** Software-only, as in EVOK: a disabled counter reads as 0. */
  private counterMode = 'Enabled';
  private readonly directSwitch: boolean;
  /** The slave's `returns` when the counter was last read: a change means the board was away. */
  private seenReturns: number;

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: DiFeature,
    private readonly index: number,
    private readonly globalId: number,
    private readonly totals?: CounterTotalLink,
  ) {
    super(circuit, slave);
    this.seenReturns = slave.returns;
    const { modes, ds_modes = ['Simple'] } = feature;
    this.directSwitch =
      modes.includes('DirectSwitch') &&
      feature.direct_reg !== undefined &&
      feature.polar_reg !== undefined &&
      feature.toggle_reg !== undefined;
    this.writeSpec = {
      mode: oneOf(modes),
      ds_mode: oneOf(ds_modes),
      counter_mode: oneOf(COUNTER_MODES),
      debounce: truncated(0, 65535),
      counter: truncated(0, 0xffffffff),
      ...(totals ? { counter_total: integer(0, Number.MAX_SAFE_INTEGER) } : {}),
    } as FieldSpec<DiWrite>;
    if (totals) {
      const block = slave.blockIndexOf('holding', this.counterAddress, 2);
      if (block >= 0) slave.onRead(block, () => this.observeCounter(block, totals));
    }
  }

  private get counterAddress(): number {
    return this.feature.counter_reg + 2 * this.index;
  }

  /** Every reading of the counter's block, changed or not, feeds the total. */
  private observeCounter(block: number, { counter, changed }: CounterTotalLink): void {
    // Straight from the block just read (both words from one reply): no lookup, no view allocated per poll.
    const { values, def } = this.slave.cache.blocks[block]!;
    const offset = this.counterAddress - def.start_reg;
    const raw = values[offset]! + values[offset + 1]! * 65536;
    if (this.slave.returns !== this.seenReturns) {
      this.seenReturns = this.slave.returns;
      counter.noteGap();
    }
    // Compared as numbers: this runs at every poll of the block, and allocating here would feed the GC.
    const { total, raw: believed } = counter;
    if (counter.observe(raw) === 'reread') this.slave.reread(block);
    if (counter.raw !== believed || counter.total !== total) changed();
  }

  /** `counter_total` in the meta view; null until a reading since start stands behind it. */
  protected override extraMeta(): Record<string, unknown> | undefined {
    if (!this.totals) return undefined;
    const { counter } = this.totals;
    return { counter_total: counter.settled ? counter.total : null };
  }

  /** `counter_total` for MQTT: the total, null before a reading since start stands behind it, undefined for a DI without one. */
  counterTotal(): number | null | undefined {
    return this.extraMeta()?.['counter_total'] as number | null | undefined;
  }

  /**
   * In DirectSwitch mode the board's firmware switches this input's output
   * (directSwitchOutput) by itself: a write that puts the input in that mode,
   * keeps it there, or changes its ds_mode there hands the output over.
   */
  outputMoves(raw: Readonly<Record<string, unknown>>): OutputMoves | undefined {
    if (!this.directSwitch) return undefined;
    const { mode, ds_mode: dsMode } = raw;
    // As apply does: ds_mode acts only when the input is (still) in DirectSwitch mode.
    const hands = mode === 'DirectSwitch' || (mode === undefined && dsMode !== undefined && this.currentMode() === 'DirectSwitch');
    if (!hands) return undefined;
    const channel = directSwitchOutput(this.slave.model, this.feature, this.index);
    const output = channel && this.slave.channels.get(channel.feature)?.[channel.index];
    return output ? { moves: [], handovers: [{ input: this, output, setting: mode === 'DirectSwitch' ? 'enable' : 'polarity' }] } : undefined;
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, counter_reg, deboun_reg, direct_reg, polar_reg, toggle_reg } = this.feature;
    const addresses = [val_reg, counter_reg + 2 * this.index, deboun_reg + this.index];
    if (this.directSwitch) addresses.push(direct_reg!, polar_reg!, toggle_reg!);
    return addresses.map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const { cache } = this.slave;
    const { val_reg, counter_reg, deboun_reg, modes } = this.feature;
    const mode = this.currentMode();
    const state: DeviceState = {
      dev: 'di',
      circuit: this.circuit,
      value: bitOf(cache, val_reg, this.index),
      debounce: cache.get('holding', deboun_reg + this.index),
      counter_modes: COUNTER_MODES,
      counter_mode: this.counterMode,
      counter: this.counterMode === 'Disabled' ? 0 : uint32LowFirst(cache, counter_reg + 2 * this.index),
      mode,
      modes,
    };
    if (mode === 'DirectSwitch') {
      state['ds_mode'] = this.currentDsMode();
      state['ds_modes'] = this.feature.ds_modes ?? ['Simple'];
    }
    state['glob_dev_id'] = this.globalId;
    return state;
  }

  private currentMode(): string | null {
    if (!this.directSwitch) return 'Simple';
    const bit = bitOf(this.slave.cache, this.feature.direct_reg!, this.index);
    return bit === null ? null : bit ? 'DirectSwitch' : 'Simple';
  }

  private currentDsMode(): string | null {
    const { cache } = this.slave;
    const inverted = bitOf(cache, this.feature.polar_reg!, this.index);
    const toggle = bitOf(cache, this.feature.toggle_reg!, this.index);
    if (inverted === null || toggle === null) return null;
    return inverted ? 'Inverted' : toggle ? 'Toggle' : 'Simple';
  }

  protected async apply(params: Partial<DiWrite>): Promise<void> {
    const { slave, index, feature } = this;
    if (params.mode !== undefined && this.directSwitch && params.mode !== this.currentMode()) {
      const [word] = await slave.readRegisters('holding', feature.direct_reg!, 1);
      await slave.writeRegister(feature.direct_reg!, withBit(word!, index, params.mode === 'DirectSwitch'));
    }
    if (params.ds_mode !== undefined && this.directSwitch && this.currentMode() === 'DirectSwitch') {
      const [polarity] = await slave.readRegisters('holding', feature.polar_reg!, 1);
      const [toggle] = await slave.readRegisters('holding', feature.toggle_reg!, 1);
      await slave.writeRegister(feature.polar_reg!, withBit(polarity!, index, params.ds_mode === 'Inverted'));
      await slave.writeRegister(feature.toggle_reg!, withBit(toggle!, index, params.ds_mode === 'Toggle'));
    }
    if (params.counter_mode !== undefined) this.counterMode = params.counter_mode;
    if (params.debounce !== undefined) await slave.writeRegister(feature.deboun_reg + index, params.debounce);
    if (params.counter !== undefined) {
      const counter = params.counter;
      await slave.writeRegisters(feature.counter_reg + 2 * index, [counter & 0xffff, Math.floor(counter / 65536)]);
      if (this.totals) {
        // EVOK's counter reset sets the board's register; the total goes on from there.
        this.totals.counter.rebase(counter);
        this.totals.changed();
        this.totals.log(`di ${this.circuit}: counter set to ${counter} by a client; counter_total stays at ${this.totals.counter.total}`);
      }
    }
    if (params.counter_total !== undefined && this.totals) {
      const before = this.totals.counter.total;
      this.totals.counter.setTotal(params.counter_total);
      this.totals.changed();
      this.totals.log(`di ${this.circuit}: counter_total set from ${before} to ${params.counter_total} by a client`);
    }
  }
}

/** A device's `counter_total` (see DigitalInput.counterTotal); undefined for anything but a DI that keeps one. */
export function counterTotalOf(device: object): number | null | undefined {
  return device instanceof DigitalInput ? device.counterTotal() : undefined;
}
