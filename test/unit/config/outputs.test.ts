import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfig } from '../../../src/config/load.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `interlocks:` and `covers:`: read with their defaults, and every mistake
// reported with the file's other problems, one line each.

function load(yaml: string) {
  const dir = tempDir('iogate-config-outputs-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `alias_file: alias.yaml\ncomm_channels: {}\n${yaml}`);
  return loadConfig({ file });
}

test('interlocks and covers with their defaults', () => {
  const { config, warnings } = load(`
interlocks:
  - outputs: [do/1_01, pump]
    dwell_ms: 500
  - outputs: [ro/2_01, ro/2_02, ro/2_03]
    switch_over: true
covers:
  living_room:
    up: do/1_03
    down: do/1_04
    travel_up_s: 20
    travel_down_s: 18
    tilt_s: 1.5
`);
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.interlocks, [
    { outputs: ['do/1_01', 'pump'], dwellMs: 500, switchOver: false, where: 'interlocks[0]' },
    { outputs: ['ro/2_01', 'ro/2_02', 'ro/2_03'], dwellMs: 0, switchOver: true, where: 'interlocks[1]' },
  ]);
  assert.deepEqual(config.covers, [{ name: 'living_room', up: 'do/1_03', down: 'do/1_04', travelUpS: 20, travelDownS: 18, overrunS: 2, dwellMs: 500, tiltS: 1.5 }]);
});

test('mistakes stop start-up, each named by its key', () => {
  assert.throws(
    () =>
      load(`
interlocks:
  - outputs: [do/1_01]
    dwell_ms: 100000
covers:
  bad name:
    up: do/1_03
    down: do/1_03
    travel_up_s: 0
  ok:
    up: do/1_01
    down: do/1_02
    travel_up_s: 5
    travel_down_s: 5
    speed: 3
`),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      const text = error.message;
      assert.match(text, /interlocks\[0\]\.outputs: an interlock needs at least two outputs/);
      assert.match(text, /interlocks\[0\]\.dwell_ms: expected an integer 0\.\.60000/);
      assert.match(text, /covers\.bad name\.down: must be another output than up/);
      assert.match(text, /covers\.bad name\.travel_up_s: expected a number >= 0\.1/);
      assert.match(text, /missing required key 'travel_down_s'/);
      assert.match(text, /a cover name may hold only letters, digits, _ and -/);
      return true;
    },
  );
  const { warnings } = load('covers:\n  ok:\n    up: do/1_01\n    down: do/1_02\n    travel_up_s: 5\n    travel_down_s: 5\n    speed: 3\n');
  assert.ok(warnings.some((warning) => /covers\.ok\.speed: unknown key, ignored/.test(warning)), warnings.join('\n'));
});
