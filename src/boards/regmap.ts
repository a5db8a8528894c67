// Address arithmetic on a board model that both the daemon and the simulator
// need, kept in one place so they agree on it.

import type { BoardModel, RegisterBlock, RegisterSpace } from './model.js';

/** What writing a coil does besides (or instead of) switching an output. */
export type CoilAction = 'wd_reset' | 'nv_save' | 'owpower';

export type CoilTarget =
  /** The coil switches one output, whose state is bit `bit` of holding register `reg`. */
  | { kind: 'bit'; reg: number; bit: number }
  | { kind: 'action'; action: CoilAction };

/**
 * Every writable coil of the board. Output coils are numbered consecutively
 * from `val_coil`, while their states are the bits of `val_reg`; firmware
 * never spreads one feature over more than 16 bits, hence `i % 16`.
 */
export function coilTargets(model: BoardModel): Map<number, CoilTarget> {
  const targets = new Map<number, CoilTarget>();
  for (const feature of model.features) {
    switch (feature.type) {
      case 'DO':
      case 'RO':
      case 'LED':
        for (let i = 0; i < feature.count; i++) {
          targets.set(feature.val_coil + i, { kind: 'bit', reg: feature.val_reg, bit: i % 16 });
        }
        break;
      case 'WD':
        targets.set(feature.reset_coil, { kind: 'action', action: 'wd_reset' });
        targets.set(feature.nv_sav_coil, { kind: 'action', action: 'nv_save' });
        break;
      case 'NV_SAVE':
        targets.set(feature.val_coil, { kind: 'action', action: 'nv_save' });
        break;
      case 'OWPOWER':
        targets.set(feature.val_coil, { kind: 'action', action: 'owpower' });
        break;
    }
  }
  return targets;
}

/**
 * Index of the first block of `space` holding all of [address, address+count),
 * or -1. Values spanning two blocks are not found on purpose: EVOK decodes a
 * multi-register value only from one block's snapshot.
 */
export function blockOf(model: { readonly blocks: readonly RegisterBlock[] }, space: RegisterSpace, address: number, count = 1): number {
  return model.blocks.findIndex(
    (b) => b.type === space && address >= b.start_reg && address + count <= b.start_reg + b.count,
  );
}
