import { Device, type DeviceState } from './device.js';
import { flag, type FieldSpec } from './fields.js';

// The alias manager `run/alias`: lists every alias and, on `save=1`, writes the
// alias file at once. EVOK names a target `<devtype>_<circuit>` here (while its
// file says `circuit` and `devtype` apart); the shape is kept for its clients.

export interface AliasTarget {
  circuit: string;
  devtype: string;
}

/** Where the aliases live: the registry's, plus saved ones whose device is absent. */
export interface AliasBook {
  entries(): ReadonlyMap<string, AliasTarget>;
  /** Write the alias file now; resolves once it is safely on disk. */
  saveNow(): Promise<void>;
}

interface RunWrite {
  save: boolean;
}

export class AliasManager extends Device<RunWrite> {
  readonly type = 'run' as const;
  override readonly aliasable = false;
  override readonly eventCapable = false;
  protected readonly writeSpec: FieldSpec<RunWrite> = { save: flag };

  constructor(private readonly book: AliasBook) {
    super('alias');
  }

  protected decode(): DeviceState {
    const aliases: Record<string, AliasTarget> = {};
    for (const [name, { circuit, devtype }] of this.book.entries()) {
      aliases[name] = { circuit: `${devtype}_${circuit}`, devtype };
    }
    return { dev: 'run', circuit: this.circuit, save: false, aliases };
  }

  /** Aliases change without passing through this device, so it is rendered on every read. */
  override full(): DeviceState {
    return this.decode();
  }

  override json(): string {
    return JSON.stringify(this.full());
  }

  protected async apply(params: Partial<RunWrite>): Promise<void> {
    if (params.save) await this.book.saveNow();
  }
}
