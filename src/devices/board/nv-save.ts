import { CoilAction } from '../digital/coil-action.js';

/** `nv_save`: writing 1 makes the board keep its current settings as power-on defaults. */
export class NvSave extends CoilAction {
  readonly type = 'nv_save' as const;
}
