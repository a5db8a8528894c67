import { Device, type DeviceState } from '../devices/device.js';
import type { FieldSpec } from '../devices/fields.js';
import type { InterlockGroup } from './interlock-group.js';
import { label } from './output.js';

// `/rest/interlock/<n>`: a read-only view of one interlock group, a type of
// its own so EVOK's device objects and listings stay exactly as they were.

export class InterlockDevice extends Device<Record<string, never>> {
  readonly type = 'interlock' as const;
  override readonly aliasable = false;
  override readonly eventCapable = false;
  protected readonly writeSpec: FieldSpec<Record<string, never>> = {};

  constructor(
    circuit: string,
    private readonly group: InterlockGroup,
  ) {
    super(circuit);
  }

  // Which member is on changes with the outputs' own events, so it is made afresh for each read.
  override full(): DeviceState {
    return this.decode();
  }

  override json(): string {
    return JSON.stringify(this.full());
  }

  protected decode(): DeviceState {
    return {
      dev: 'interlock',
      circuit: this.circuit,
      outputs: this.group.outputs.map(label),
      dwell_ms: this.group.dwellMs,
      switch_over: this.group.switchOver,
      on: this.group.onMembers().map(label),
    };
  }

  protected async apply(): Promise<void> {}
}
