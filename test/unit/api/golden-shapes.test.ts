import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { captureGoldenShapes, type GoldenShapes } from '../../support/golden-shapes.js';

// EVOK's clients see nothing new: without `?meta=1`, `/ws?meta=1` or the
// webhook's `meta:` key, the answers are byte for byte what they were before
// quality, age and counter totals existed (captured from that code).

const golden = JSON.parse(readFileSync(new URL('../../../fixtures/golden/default-shapes.json', import.meta.url), 'utf8')) as GoldenShapes;

test('default /rest/all, /rest/di, WebSocket pushes and webhook bodies are byte-identical to before', async () => {
  const now = await captureGoldenShapes();
  assert.equal(now.restAll, golden.restAll);
  assert.equal(now.restDi, golden.restDi);
  assert.deepEqual(now.wsPushes, golden.wsPushes);
  assert.deepEqual(now.webhookBodies, golden.webhookBodies);
  for (const text of [now.restAll, now.restDi, ...now.wsPushes, ...now.webhookBodies]) {
    assert.doesNotMatch(text, /"(quality|ts|age_s|counter_total)"/);
  }
});
