import { CoilAction } from '../digital/coil-action.js';

/** 1-Wire master power `owpower` of the Brain section: writing 0 then 1 power-cycles the 1-Wire bus. */
export class OneWirePower extends CoilAction {
  readonly type = 'owpower' as const;
}
