import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { CounterTotal, MAX_PLAIN_STEP, NEAR, type CounterSnapshot } from '../../../src/devices/digital/counter-total.js';

// The total of a DI counter over raw 32-bit readings: wraps, resets, torn
// reads, offline gaps and restarts from saved state.

const WRAP = 2 ** 32;

/** Feeds one reading the way the DI does: a suspect is read again at once. */
function read(counter: CounterTotal, raw: number, reread: () => number = () => raw): void {
  if (counter.observe(raw) === 'reread') {
    // A board that keeps disagreeing is read until the counter settles (bounded by MAX_SUSPECTS inside).
    for (let i = 0; i < 5 && counter.observe(reread()) === 'reread'; i++);
  }
}

test('the first reading is believed once a second one agrees; the total starts at the board count', () => {
  const counter = new CounterTotal();
  assert.equal(counter.observe(1000), 'reread');
  assert.equal(counter.settled, false);
  assert.equal(counter.observe(1002), 'ok');
  assert.equal(counter.total, 1002);
  assert.equal(counter.settled, true);
});

test('small steps add up; a 32-bit wrap is added once', () => {
  const counter = new CounterTotal();
  read(counter, WRAP - 10);
  read(counter, WRAP - 5);
  assert.equal(counter.total, WRAP - 5);
  read(counter, 3);
  assert.equal(counter.total, WRAP + 3);
  read(counter, 3);
  read(counter, 10);
  assert.equal(counter.total, WRAP + 10);
});

test('a drop to near zero is a reset: the total continues with what was counted since', () => {
  const counter = new CounterTotal();
  read(counter, 5000);
  read(counter, 5010);
  read(counter, 7);
  assert.equal(counter.total, 5017);
  read(counter, 9);
  assert.equal(counter.total, 5019);
});

test('after the board was away, a backwards step near the top is a reset, not a wrap', () => {
  const counter = new CounterTotal();
  read(counter, WRAP - 100);
  counter.noteGap();
  read(counter, 4);
  assert.equal(counter.total, WRAP - 100 + 4);
});

test('a torn read (either word from another instant) is read again and dropped', () => {
  for (const torn of [0x0000_0010, 0x0002_fff0]) {
    const counter = new CounterTotal();
    read(counter, 0x0001_fff0);
    // The counter moves from 0x0001fff0 to 0x00020010 during a read; a torn read mixes the two.
    assert.equal(counter.observe(torn), 'reread');
    assert.equal(counter.total, 0x0001_fff0, 'nothing is added before the second reading');
    assert.equal(counter.observe(0x0002_0012), 'ok');
    assert.equal(counter.total, 0x0002_0012);
  }
});

test('a big jump (pulses while the board was not read) is believed once confirmed', () => {
  const counter = new CounterTotal();
  read(counter, 100);
  assert.equal(counter.observe(100 + 5 * MAX_PLAIN_STEP), 'reread');
  assert.equal(counter.observe(100 + 5 * MAX_PLAIN_STEP + 1), 'ok');
  assert.equal(counter.total, 100 + 5 * MAX_PLAIN_STEP + 1);
});

test('after a restart from saved state, pulses counted meanwhile are added; a reset meanwhile loses only what followed the save', () => {
  const saved: CounterSnapshot = { total: 10_000_000_000, raw: 500 };
  const kept = new CounterTotal(saved);
  assert.equal(kept.settled, false);
  read(kept, 900);
  read(kept, 901);
  assert.equal(kept.total, 10_000_000_401);
  const reset = new CounterTotal(saved);
  read(reset, 30);
  read(reset, 31);
  assert.equal(reset.total, 10_000_000_031);
});

test("EVOK's counter write rebases without adding; setting the total is separate", () => {
  const counter = new CounterTotal();
  read(counter, 700);
  read(counter, 700);
  counter.rebase(0);
  read(counter, 5);
  assert.equal(counter.total, 705);
  counter.setTotal(0);
  read(counter, 6);
  assert.equal(counter.total, 1);
});

test('a counter set backwards far from zero by someone else is followed without adding', () => {
  const events: string[] = [];
  const counter = new CounterTotal(undefined, (event) => events.push(event.kind));
  read(counter, 90_000_000);
  read(counter, 50_000_000);
  assert.equal(counter.total, 90_000_000);
  read(counter, 50_000_010);
  assert.equal(counter.total, 90_000_010);
  assert.deepEqual(events, ['rebased']);
});

// Property: against a model board, over random sequences of pulses, reads,
// torn reads, resets (power cycles, with or without an offline gap), offline
// gaps, saves and crashes, the total never decreases while iogate runs and
// always equals what the board counted minus the documented loss: pulses a
// board forgot in a reset that iogate had not read yet (at most those since
// the last save when iogate was down).

type Op =
  | { kind: 'pulses'; n: number }
  | { kind: 'read' }
  | { kind: 'torn'; n: number; highFromNew: boolean }
  | { kind: 'reset'; gap: boolean }
  | { kind: 'gap'; n: number }
  | { kind: 'save' }
  | { kind: 'crash' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2000 }).map((n): Op => ({ kind: 'pulses', n })) },
  { weight: 6, arbitrary: fc.constant<Op>({ kind: 'read' }) },
  { weight: 2, arbitrary: fc.record({ n: fc.integer({ min: 1, max: 2000 }), highFromNew: fc.boolean() }).map((r): Op => ({ kind: 'torn', ...r })) },
  { weight: 1, arbitrary: fc.boolean().map((gap): Op => ({ kind: 'reset', gap })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 ** 22 }).map((n): Op => ({ kind: 'gap', n })) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'save' }) },
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'crash' }) },
);

interface Run {
  checks: number;
  wraps: number;
  resets: number;
  crashes: number;
  torn: number;
  /** Largest loss after a crash, in pulses. */
  maxLoss: number;
}

function runModel(start: number, ops: readonly Op[]): Run {
  const stats: Run = { checks: 0, wraps: 0, resets: 0, crashes: 0, torn: 0, maxLoss: 0 };
  let board = start;
  /** What the total should be: everything counted since the first reading, less the documented loss. */
  let expected = start;
  let saved: CounterSnapshot | undefined;
  let pulsesSinceSave = 0;
  let resetsSinceSave = 0;
  let wrapsSinceSave = 0;
  let counter = new CounterTotal();
  read(counter, board);
  let shown = counter.total;
  const pulse = (n: number) => {
    const before = board;
    board = (board + n) % WRAP;
    if (board < before) {
      stats.wraps++;
      wrapsSinceSave++;
    }
    expected += n;
    pulsesSinceSave += n;
  };
  const check = () => {
    stats.checks++;
    assert.ok(counter.total >= shown, `total went back from ${shown} to ${counter.total}`);
    shown = counter.total;
    assert.equal(counter.total, expected, 'total equals the count less the documented loss');
  };
  for (const step of ops) {
    switch (step.kind) {
      case 'pulses':
        pulse(step.n);
        break;
      case 'read':
        read(counter, board);
        check();
        break;
      case 'torn': {
        const old = board;
        pulse(step.n);
        const torn = step.highFromNew ? (board & 0xffff0000) + (old & 0xffff) : (old & 0xffff0000) + (board & 0xffff);
        stats.torn++;
        read(counter, torn, () => board);
        // A torn read may still be a value the counter had: believed, it only lags; the next clean read catches up.
        assert.ok(counter.total >= shown && counter.total <= expected, `after a torn read: ${counter.total} vs ${shown}..${expected}`);
        shown = counter.total;
        break;
      }
      case 'reset': {
        // The board was read at every scan until it went away.
        read(counter, board);
        check();
        // A reset without an offline gap (a quick power blip) near the top of the range cannot be told from a wrap; real power cycles take the board offline.
        const base = counter.snapshot()?.raw ?? board;
        if (!step.gap && base + NEAR >= WRAP) break;
        // What the board counted since iogate's last believed reading is gone with the reset.
        expected -= (board - base + WRAP) % WRAP;
        board = 0;
        stats.resets++;
        resetsSinceSave++;
        if (step.gap) counter.noteGap();
        // The board is read when it answers again, long before it could count back to where it was.
        read(counter, board);
        check();
        break;
      }
      case 'gap':
        // Offline for a while, counting (without crossing the top: a wrap during an outage reads as a reset).
        if (board + step.n >= WRAP) break;
        read(counter, board);
        check();
        pulse(step.n);
        counter.noteGap();
        // Read as soon as it answers again.
        read(counter, board);
        check();
        break;
      case 'save':
        // Saves take the state of the last reading; the daemon reads at every scan.
        read(counter, board);
        check();
        saved = counter.snapshot();
        pulsesSinceSave = resetsSinceSave = wrapsSinceSave = 0;
        break;
      case 'crash': {
        if (!saved) break;
        stats.crashes++;
        // iogate starts again from the last save while the board went on counting.
        counter = new CounterTotal(saved);
        read(counter, board);
        if (resetsSinceSave === 0 && wrapsSinceSave === 0) {
          // Nothing is lost: the saved raw reading tells what the board counted since.
          check();
        } else {
          // The board reset (or wrapped) since the save: at most what it counted since the save is lost.
          const lost = expected - counter.total;
          assert.ok(lost >= 0 && lost <= pulsesSinceSave, `lost ${lost} with ${pulsesSinceSave} pulses since the save`);
          stats.maxLoss = Math.max(stats.maxLoss, lost);
          expected = shown = counter.total;
        }
        break;
      }
    }
  }
  read(counter, board);
  check();
  return stats;
}

test('property: the total is monotonic and exact except for the documented loss', () => {
  const totals: Run = { checks: 0, wraps: 0, resets: 0, crashes: 0, torn: 0, maxLoss: 0 };
  let runs = 0;
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: WRAP - 200_000, max: WRAP - 1 }), fc.integer({ min: 0, max: WRAP - 1 })),
      fc.array(op, { minLength: 20, maxLength: 200, size: 'max' }),
      (start, ops) => {
        runs++;
        const stats = runModel(start, ops);
        for (const key of Object.keys(totals) as (keyof Run)[]) totals[key] = key === 'maxLoss' ? Math.max(totals[key], stats[key]) : totals[key] + stats[key];
      },
    ),
    { numRuns: 1000 },
  );
  // The sequences did exercise what they are about.
  assert.ok(totals.wraps > 20 && totals.resets > 100 && totals.crashes > 50 && totals.torn > 300, JSON.stringify(totals));
  console.log(`counter property: ${runs} sequences, ${totals.checks} checked readings, ${totals.wraps} wraps, ${totals.resets} resets, ${totals.torn} torn reads, ${totals.crashes} crashes, largest loss after a crash ${totals.maxLoss} pulses (all since the last save)`);
});
