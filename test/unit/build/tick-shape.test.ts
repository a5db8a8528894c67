import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The nextTick entry kept for the life of the process (src/memory/tick-shape.ts):
// it is an entry, the module holds that one entry, and after full collections
// with no other entry alive a new entry still has its map (V8's hidden class),
// so keeping one is enough to keep the shape. Run in a child with V8's test
// natives (%HaveSameMap) and gc(). What losing the shape costs is measured by
// bench/tick-shape.mjs, not here.

const MODULE = fileURLToPath(new URL('../../../src/memory/tick-shape.ts', import.meta.url));

const CHILD = `
import { catchTickObject, keepTickObjectShape } from ${JSON.stringify(MODULE)};
const kept = keepTickObjectShape();
/** A new nextTick entry, not kept. */
const entry = catchTickObject;
const report = {
  keptKeys: kept ? [...Object.keys(kept), ...Object.getOwnPropertySymbols(kept).map(String)] : null,
  sameBefore: %HaveSameMap(kept, entry()),
  again: keepTickObjectShape() === kept,
};
// Once the queue is empty no entry but the kept one is alive; two full collections, as the daemon's quiet ones.
setImmediate(() => {
  gc();
  gc();
  report.sameAfter = %HaveSameMap(kept, entry());
  process.stdout.write(JSON.stringify(report));
});
`;

describe('the kept nextTick entry', { timeout: 30_000 }, () => {
  test('is a nextTick entry, and new entries keep its map across full collections', () => {
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', '--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', CHILD],
      { encoding: 'utf8', timeout: 20_000 },
    );
    const report = JSON.parse(out) as { keptKeys: string[] | null; sameBefore: boolean; sameAfter: boolean; again: boolean };
    assert.deepEqual(report.keptKeys, ['callback', 'args', 'Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)']);
    assert.equal(report.sameBefore, true);
    assert.equal(report.sameAfter, true);
    assert.equal(report.again, true, 'one entry for the whole process');
  });
});
