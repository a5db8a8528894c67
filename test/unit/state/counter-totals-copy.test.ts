import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { CounterBook } from '../../../src/devices/digital/counter-book.js';
import type { CounterTotal } from '../../../src/devices/digital/counter-total.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A counter total never goes backwards, across a restart too. The file is
// written atomically, so a crash cannot tear it; but a file damaged at rest
// (a bad block on the card, an edit by hand) used to count as no file: the
// total started again from the board's count, and after a board reset that
// was lower (5,380 → 4,580 in the field report). The copy written beside it
// is the last good state.

function reading(counter: CounterTotal, raw: number): void {
  // A reading is believed once a second one agrees (and a suspect one is read again).
  for (let i = 0; i < 3; i++) counter.observe(raw);
}

function quietLog(lines: string[]) {
  return { info: () => {}, warn: (line: string) => lines.push(line), error: (line: string) => lines.push(line) };
}

for (const [damage, spoil] of [
  ['cut short', (text: string) => text.slice(0, Math.floor(text.length / 2))],
  ['valid JSON without the counter', () => '{"format":1,"counters":{}}\n'],
  ['a lower total', (text: string) => text.replace('5380', '180')],
] as const) {
  test(`a counter-totals.json damaged at rest (${damage}) does not lower the total after a restart and a board reset`, async () => {
    const dir = tempDir('iogate-counters-');
    const lines: string[] = [];
    const before = new CounterBook(dir, 10, quietLog(lines));
    const counter = before.open('1_01');
    reading(counter, 5000);
    reading(counter, 5380);
    assert.equal(counter.total, 5380);
    before.changed();
    await before.flush();

    writeFileSync(before.path, spoil(readFileSync(before.path, 'utf8')));
    // While iogate was down the board was reset and counted 20 pulses.
    const after = new CounterBook(dir, 10, quietLog(lines));
    const restarted = after.open('1_01');
    reading(restarted, 20);
    assert.ok(restarted.total >= 5380, `counter_total went back from 5380 to ${restarted.total}`);
    assert.equal(restarted.total, 5400, 'the pulses counted since the reset are added to the last good total');
    assert.ok(lines.some((line) => /1_01: 5380 taken from .*last-good/.test(line)), lines.join('\n'));
  });
}
