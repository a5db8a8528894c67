import { firstLine } from '../../state/first-line.js';
import { bitKey, type OffloadedBit, type OffloadLedger } from './ledger.js';
import { planOffload, type OffloadRequest, type OffloadResult, type PlanContext, type PlannedSwitch } from './plan.js';

// Hands the rules marked `offload: firmware` to the boards' DirectSwitch, and
// takes back what the config no longer asks for. The engine calls this at
// start-up and at every reload with the full list of such rules; each call
// brings the boards' masks to exactly that list (for the bits iogate owns).
//
// Per board mask triple: fresh read, write the changed masks (a new mode's
// polarity and toggle before its enable bit, so the output never runs in a
// mode nobody asked for; a removed one's enable bit first), read back, and
// report a rule offloaded only when the read-back shows its three bits.

/** Register access of one board, through the bus queue (serialized with polling) like every other write. */
export interface OffloadBoardIo {
  /** A fresh read of one holding register. */
  read(address: number): Promise<number>;
  write(address: number, value: number): Promise<void>;
}

export interface OffloadDeps extends PlanContext {
  io(board: string): OffloadBoardIo | undefined;
  ledger: OffloadLedger;
  log(level: 'info' | 'warn', message: string): void;
}

interface Masks {
  direct: number;
  polar: number;
  toggle: number;
}

interface MaskGroup {
  board: string;
  regs: { direct_reg: number; polar_reg: number; toggle_reg: number };
  wanted: PlannedSwitch[];
  /** Bits iogate set earlier that no rule asks for now. */
  released: OffloadedBit[];
}

const running = new WeakMap<OffloadDeps, Promise<unknown>>();

/** One reconcile at a time per runtime: a reload that comes during start-up's waits for it. */
export function reconcileFirmwareOffload(deps: OffloadDeps, requests: readonly OffloadRequest[]): Promise<OffloadResult[]> {
  const before = running.get(deps) ?? Promise.resolve();
  const next = before.catch(() => {}).then(() => reconcile(deps, requests));
  running.set(deps, next);
  return next;
}

async function reconcile(deps: OffloadDeps, requests: readonly OffloadRequest[]): Promise<OffloadResult[]> {
  const plan = planOffload(deps, requests);
  for (const refused of plan.refused) deps.log('warn', `automation ${refused.id}: not offloaded to the firmware: ${refused.reason}`);
  const owned = await deps.ledger.load();
  const wantedKeys = new Set(plan.accepted.map((planned) => bitKey({ board: planned.board, direct_reg: planned.input.direct_reg!, bit: planned.bit })));

  const groups = new Map<string, MaskGroup>();
  const groupOf = (board: string, regs: MaskGroup['regs']) => {
    const key = `${board}@${regs.direct_reg}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { board, regs, wanted: [], released: [] }));
    return group;
  };
  for (const planned of plan.accepted) {
    const { direct_reg, polar_reg, toggle_reg } = planned.input;
    groupOf(planned.board, { direct_reg: direct_reg!, polar_reg: polar_reg!, toggle_reg: toggle_reg! }).wanted.push(planned);
  }
  for (const bit of owned) if (!wantedKeys.has(bitKey(bit))) groupOf(bit.board, bit).released.push(bit);

  // Write the ledger ahead of the writes: a stop between a write and the
  // ledger would otherwise leave a bit set that no later run knows is ours.
  const toRecord = (planned: PlannedSwitch, group: MaskGroup): OffloadedBit => ({ board: group.board, ...group.regs, bit: planned.bit, rule: planned.request.id });
  const ahead = new Map<string, OffloadedBit>(owned.map((bit) => [bitKey(bit), bit]));
  for (const group of groups.values()) for (const planned of group.wanted) ahead.set(bitKey(toRecord(planned, group)), toRecord(planned, group));
  await deps.ledger.save([...ahead.values()]);

  const results = new Map<string, OffloadResult>(plan.refused.map((result) => [result.id, result]));
  const kept: OffloadedBit[] = [];
  for (const group of groups.values()) {
    const outcome = await reconcileGroup(deps, group);
    for (const planned of group.wanted) {
      const failure = outcome.failures.get(planned.bit);
      results.set(planned.request.id, failure ? { id: planned.request.id, offloaded: false, reason: failure } : { id: planned.request.id, offloaded: true });
      // A bit that may be set (even half) stays ours to clear later.
      kept.push(toRecord(planned, group));
      if (failure) deps.log('warn', `automation ${planned.request.id}: not offloaded to the firmware: ${failure}`);
      else deps.log('info', `automation ${planned.request.id}: offloaded to board ${group.board}'s DirectSwitch (${planned.request.input} → ${planned.request.output}, ${planned.request.mode})`);
    }
    for (const bit of group.released) {
      if (outcome.stillSet.has(bit.bit)) {
        kept.push(bit);
        deps.log('warn', `board ${group.board}: could not clear the DirectSwitch of input bit ${bit.bit} (rule ${bit.rule} is gone); will try again at the next reload`);
      } else deps.log('info', `board ${group.board}: DirectSwitch of input bit ${bit.bit} cleared (rule ${bit.rule} is no longer offloaded)`);
    }
  }
  await deps.ledger.save(kept);
  return requests.map((request) => results.get(request.id)!);
}

async function readMasks(io: OffloadBoardIo, regs: MaskGroup['regs']): Promise<Masks> {
  return { direct: await io.read(regs.direct_reg), polar: await io.read(regs.polar_reg), toggle: await io.read(regs.toggle_reg) };
}

/** Brings one board's masks to what the group asks; returns the bits that failed and the released bits still set. */
async function reconcileGroup(deps: OffloadDeps, group: MaskGroup): Promise<{ failures: Map<number, string>; stillSet: Set<number> }> {
  const failures = new Map<number, string>();
  const stillSet = new Set<number>();
  const failAll = (reason: string) => {
    for (const planned of group.wanted) failures.set(planned.bit, reason);
    for (const bit of group.released) stillSet.add(bit.bit);
    return { failures, stillSet };
  };
  const io = deps.io(group.board);
  if (!io) return failAll(`board ${group.board} is not configured`);
  const { regs } = group;
  try {
    const found = await readMasks(io, regs);
    const ours = new Set([...group.wanted.map((planned) => planned.bit), ...group.released.map((bit) => bit.bit)]);
    for (let bit = 0; bit < 16; bit++) {
      if (found.direct & (1 << bit) && !ours.has(bit)) {
        // Left as found (ADR 0002): someone chose it outside iogate's config.
        deps.log('warn', `board ${group.board}: DirectSwitch of input bit ${bit} is on, set outside iogate's automations; left as it is`);
      }
    }
    const target = { ...found };
    for (const bit of group.released) {
      const mask = 1 << bit.bit;
      target.direct &= ~mask;
      target.polar &= ~mask;
      target.toggle &= ~mask;
    }
    for (const planned of group.wanted) {
      const mask = 1 << planned.bit;
      target.direct |= mask;
      target.polar = planned.inverted ? target.polar | mask : target.polar & ~mask;
      target.toggle = planned.toggle ? target.toggle | mask : target.toggle & ~mask;
    }
    // Enable bits off first — of released inputs, and of inputs whose mode changes, so no input runs
    // for a moment in a mix of old and new mode bits —, then the mode bits, then the enables.
    const modeChanged = (target.polar ^ found.polar) | (target.toggle ^ found.toggle);
    const releasedMask = group.released.reduce((mask, bit) => mask | (1 << bit.bit), 0);
    const step1 = found.direct & ~(releasedMask | modeChanged);
    if (step1 !== found.direct) await io.write(regs.direct_reg, step1);
    if (target.polar !== found.polar) await io.write(regs.polar_reg, target.polar);
    if (target.toggle !== found.toggle) await io.write(regs.toggle_reg, target.toggle);
    if (target.direct !== step1) await io.write(regs.direct_reg, target.direct);

    const seen = await readMasks(io, regs);
    for (const planned of group.wanted) {
      const mask = 1 << planned.bit;
      const wrong: string[] = [];
      if (!(seen.direct & mask)) wrong.push('enable bit is off');
      if (Boolean(seen.polar & mask) !== planned.inverted) wrong.push(`polarity bit is ${seen.polar & mask ? 'on' : 'off'}`);
      if (Boolean(seen.toggle & mask) !== planned.toggle) wrong.push(`toggle bit is ${seen.toggle & mask ? 'on' : 'off'}`);
      if (wrong.length > 0) {
        failures.set(planned.bit, `board ${group.board} did not keep the DirectSwitch setting: read back, its ${wrong.join(', ')} (registers ${regs.direct_reg}/${regs.polar_reg}/${regs.toggle_reg})`);
      }
    }
    for (const bit of group.released) if (seen.direct & (1 << bit.bit)) stillSet.add(bit.bit);
    return { failures, stillSet };
  } catch (error) {
    return failAll(`board ${group.board} did not answer: ${firstLine(error)}`);
  }
}

export type { OffloadRequest, OffloadResult } from './plan.js';
