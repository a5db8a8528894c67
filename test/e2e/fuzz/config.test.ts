import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfig } from '../../../src/config/load.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Fuzzing the configuration loader with random edits of the fixture files:
// every result must be a configuration or a ConfigError whose problems each
// say where and what, never a crash, a hang or a silent half-read.

const RUNS = 1500;
const SEED = 0xc0f19;

const FIXTURES = fileURLToPath(new URL('../../../fixtures/config/', import.meta.url));
const SOURCES = ['simulator.yaml', 'neuron-l533.yaml', 'extensions-rs485.yaml', 'shipped/config.yaml', 'shipped/autogen.yaml', ...readdirSync(join(FIXTURES, 'broken')).map((name) => `broken/${name}`)].map(
  (name) => readFileSync(join(FIXTURES, name), 'utf8'),
);

/** Values that have broken YAML readers before: wrong types, extremes, YAML syntax in odd places. */
const NASTY_SCALARS = [
  '', '~', 'null', '-1', '0', '65536', '1e400', '.nan', '0x1F', 'true', 'yes', 'N', '"', "'", '[', '{', '[a, b]', '{x: 1}', '&a x', '*a', '!!binary AAAA',
  '!!python/object:os.system ls', '|', '>', '- item', '"\\u0000"', 'x'.repeat(5000), '? complex', '%TAG ! x', '---', '...', '@', '`', '\t',
];

type Edit = (lines: string[]) => void;

const lineIndex = fc.nat();
const edit: fc.Arbitrary<Edit> = fc.oneof(
  lineIndex.map((i): Edit => (lines) => void lines.splice(i % (lines.length + 1), 1)),
  lineIndex.map((i): Edit => (lines) => void lines.splice(i % (lines.length + 1), 0, lines[i % Math.max(1, lines.length)] ?? '')),
  fc.tuple(lineIndex, fc.constantFrom(...NASTY_SCALARS)).map(([i, value]): Edit => (lines) => {
    const at = i % Math.max(1, lines.length);
    const line = lines[at] ?? '';
    const colon = line.indexOf(':');
    lines[at] = colon < 0 ? `${line} ${value}` : `${line.slice(0, colon + 1)} ${value}`;
  }),
  fc.tuple(lineIndex, fc.integer({ min: -4, max: 4 })).map(([i, shift]): Edit => (lines) => {
    const at = i % Math.max(1, lines.length);
    const line = lines[at] ?? '';
    lines[at] = shift >= 0 ? ' '.repeat(shift) + line : line.replace(new RegExp(`^ {0,${-shift}}`), '');
  }),
  fc.tuple(lineIndex, fc.string({ unit: 'binary', maxLength: 20 })).map(([i, text]): Edit => (lines) => {
    const at = i % Math.max(1, lines.length);
    const line = lines[at] ?? '';
    const cut = i % (line.length + 1);
    lines[at] = line.slice(0, cut) + text + line.slice(cut);
  }),
);

test(`loadConfig: random edits of the fixtures load or fail with located problems (${RUNS} inputs)`, () => {
  const dir = tempDir('iogate-fuzz-config-');
  const file = join(dir, 'config.yaml');
  // autogen files named in edited text must not reach the real /etc/evok.
  const autogenFile = join(dir, 'autogen.yaml');
  writeFileSync(autogenFile, SOURCES[4]!);
  let loaded = 0;
  let rejected = 0;
  fc.assert(
    fc.property(fc.nat({ max: SOURCES.length - 1 }), fc.array(edit, { minLength: 1, maxLength: 5 }), (source, edits) => {
      const lines = SOURCES[source]!.split('\n');
      for (const apply of edits) apply(lines);
      writeFileSync(file, lines.join('\n'));
      try {
        const { config, warnings } = loadConfig({ file, autogenFile });
        assert.ok(Array.isArray(config.buses) && Number.isInteger(config.apis.port));
        for (const warning of warnings) assert.ok(warning.length > 0);
        loaded++;
      } catch (error) {
        assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${(error as Error).stack}`);
        assert.ok(error.problems.length > 0);
        for (const problem of error.problems) assert.ok(problem.includes(file), `problem without a location: ${problem}`);
        rejected++;
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
  // Both outcomes must occur, or the edits are not exercising the loader.
  assert.ok(loaded > 0 && rejected > 0, `loaded ${loaded}, rejected ${rejected}`);
});

test('loadConfig: an alias bomb is refused rather than expanded', () => {
  const dir = tempDir('iogate-fuzz-config-');
  const file = join(dir, 'config.yaml');
  const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 9; i++) {
    const previous = String.fromCharCode(96 + i);
    const name = String.fromCharCode(97 + i);
    levels.push(`${name}: &${name} [${new Array(9).fill(`*${previous}`).join(',')}]`);
  }
  writeFileSync(file, `${levels.join('\n')}\n`);
  // Expanded, the document would hold 9^9 strings: a loader that tried would
  // run into the test's deadline or out of memory instead of throwing.
  assert.throws(() => loadConfig({ file }), ConfigError);
});
