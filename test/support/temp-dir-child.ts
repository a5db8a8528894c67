import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/temp-dir.js';

// A test process in miniature for test/unit/helpers/temp-dir.test.ts: makes two
// directories with tempDir, fills one, prints their paths as JSON and ends as
// argv[2] says: `exit` (normally), `removed-early` (after removing one itself,
// as some tests do) or `throws` (an uncaught error, as a failing test file ends).

const how = process.argv[2];
const filled = tempDir('iogate-tempdir-check-');
const empty = tempDir('iogate-tempdir-check-');
mkdirSync(join(filled, 'nested'));
writeFileSync(join(filled, 'nested', 'state.json'), '{}');
writeFileSync(join(filled, 'config.yaml'), 'comm_channels: {}\n');
process.stdout.write(`${JSON.stringify([filled, empty])}\n`);
if (how === 'removed-early') rmSync(empty, { recursive: true });
if (how === 'throws') throw new Error('a failing test');
