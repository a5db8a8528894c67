import { CoilAction } from '../digital/coil-action.js';
import { keywordRefusal, type UnknownField } from '../fields.js';

/** `nv_save`: writing 1 makes the board keep its current settings as power-on defaults. */
export class NvSave extends CoilAction {
  readonly type = 'nv_save' as const;
  /** EVOK had no schema for `nv_save`: its `set()` refused an unknown field. */
  protected override readonly unknownField: UnknownField = keywordRefusal;
}
