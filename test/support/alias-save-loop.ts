// Child process for the atomicity test: saves two large alias tables in turn,
// forever, until the parent kills it. Prints "saving" once the loop runs.
import { writeAliasFileAtomic } from '../../src/registry/alias-store.js';
import { bigAliasTable } from './alias-tables.js';

const [path] = process.argv.slice(2);
const tables = [bigAliasTable('ro'), bigAliasTable('do')];
process.stdout.write('saving\n');
for (let round = 0; ; round++) {
  await writeAliasFileAtomic(path, tables[round % 2]);
}
