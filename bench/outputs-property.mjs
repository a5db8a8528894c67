// The outputs property test at length (run by hand: npm run bench:outputs).
//
// test/e2e/control/property.test.ts runs 10,000 random steps in CI; this runs
// it with many more (BENCH_STEPS, default 50,000) and one or more seeds
// (BENCH_SEEDS, comma-separated), each in its own process, and prints the
// test's summary line per seed: steps, board samples, position checks with
// the worst error, interlock violations, seconds. A finding fails the run and
// names its seed, so it can be repeated with IOGATE_PROPERTY_SEED.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const STEPS = Number(process.env.BENCH_STEPS ?? 50_000);
const SEEDS = (process.env.BENCH_SEEDS ?? '20261125').split(',').map(Number);

let failed = false;
for (const seed of SEEDS) {
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-timeout=3600000', '--test-reporter=tap', 'test/e2e/control/property.test.ts'],
    { cwd: root, encoding: 'utf8', env: { ...process.env, IOGATE_PROPERTY_STEPS: String(STEPS), IOGATE_PROPERTY_SEED: String(seed) } },
  );
  const summary = /property: .*/.exec(run.stdout + run.stderr)?.[0] ?? '(no summary line)';
  const ok = run.status === 0;
  failed ||= !ok;
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} seed ${seed}: ${summary}\n`);
  if (!ok) process.stdout.write(`${(/error: .*/.exec(run.stdout) ?? [''])[0]}\n`);
}
process.exit(failed ? 1 : 0);
