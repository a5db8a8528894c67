import { Device, type DeviceState } from '../devices/device.js';
import { binary, type FieldSpec } from '../devices/fields.js';

// `/rest/automation/<id>`: one automation as a device, so every API lists,
// pushes and controls it as it does any other: `enabled=0|1` switches it on
// or off, `trigger=1` runs its actions now (conditions included). Its
// writes come through the one write path like any client's.

export interface AutomationWrite {
  enabled: 0 | 1;
  trigger: 0 | 1;
}

/** What the device shows and does; the engine's runner behind it. */
export interface AutomationView {
  readonly id: string;
  enabled: boolean;
  offloaded: boolean;
  offloadReason: string | undefined;
  lastTriggered: number | undefined;
  lastResult: string | null;
  nextRun: number | undefined;
  runs: number;
  /** The plain sentence --check-config prints. */
  readonly sentence: string;
  setEnabled(enabled: boolean, by: string): void;
  triggerNow(by: string): void;
}

export class AutomationDevice extends Device<AutomationWrite> {
  readonly type = 'automation' as const;
  override readonly aliasable = false;
  protected readonly writeSpec: FieldSpec<AutomationWrite> = { enabled: binary, trigger: binary };

  constructor(readonly view: AutomationView) {
    super(view.id);
  }

  protected decode(): DeviceState {
    const { view } = this;
    return {
      dev: 'automation',
      circuit: this.circuit,
      enabled: view.enabled,
      offloaded: view.offloaded,
      last_triggered: view.lastTriggered === undefined ? null : new Date(view.lastTriggered).toISOString(),
      last_result: view.lastResult,
      next_run: view.nextRun === undefined ? null : new Date(view.nextRun).toISOString(),
      runs: view.runs,
      description: view.sentence,
    };
  }

  protected async apply(params: Partial<AutomationWrite>): Promise<void> {
    if (params.enabled !== undefined) this.view.setEnabled(params.enabled === 1, 'a client');
    if (params.trigger === 1) this.view.triggerNow('a client');
  }
}
