import { spawn, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { tempDir } from '../helpers/temp-dir.js';

// Mutation check of the safety rules: every mutant in mutants.yaml breaks one
// rule on one line; the tests it names must then fail. A mutant they do not
// catch ("survivor") is a rule no test holds, and fails the run; so does a
// mutant marked `open` (a rule whose test is still missing), so a gap cannot
// hide in the list. Mutants are applied in a copy of the tree (never the
// working tree, so a crash or a kill cannot leave a broken rule behind), one
// at a time, each restored before the next. A snippet that is not found
// exactly once fails the run too: code that moved must move its mutant along,
// not drop out of the check unnoticed.
//
//   npm run mutants                       every mutant
//   npm run mutants -- --only pulse-never-ends,crc-init   those mutants
//   npm run mutants -- --area sparkplug   the mutants whose id or file contains the word
//   npm run mutants -- --check            only that every snippet is found once
//   npm run mutants -- --list             the list, nothing run
//   npm run mutants -- --no-baseline      skip the first pass that checks each test set passes unmutated

interface Mutant {
  id: string;
  file: string;
  /** Exact text of the original, found exactly once in `file`. */
  find: string;
  replace: string;
  why: string;
  /** Test files (from the repo root) that must fail with the mutant in. */
  tests: string[];
  /** Passed as --test-name-pattern, to run only the tests that catch it. */
  pattern?: string;
  /** Whether the tests need the bundle (dist/) built from the mutated source. */
  build?: boolean;
  /** Set when the mutant is equivalent: the argument why; such a mutant is not run. */
  equivalent?: string;
  /**
   * Set when the rule has no test yet that catches it: what is missing. Not
   * run, and it fails the run like a survivor until a test closes it.
   */
  open?: string;
  /** The per-mutant deadline, seconds (default 180); a timeout counts as killed. */
  timeout?: number;
}

type Outcome = 'killed' | 'survived' | 'timeout (killed)' | 'snippet missing' | 'equivalent (not run)' | 'open (no test yet)';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LIST = join(ROOT, 'test', 'mutants', 'mutants.yaml');

function readMutants(): Mutant[] {
  const doc = parse(readFileSync(LIST, 'utf8')) as { mutants?: unknown };
  if (!Array.isArray(doc?.mutants)) throw new Error(`${LIST}: expected a top-level "mutants:" list`);
  const seen = new Set<string>();
  return doc.mutants.map((raw, index) => {
    const m = raw as Partial<Mutant>;
    const where = `${LIST}: mutants[${index}]${m.id ? ` (${m.id})` : ''}`;
    for (const key of ['id', 'file', 'find', 'why'] as const) {
      if (typeof m[key] !== 'string' || m[key] === '') throw new Error(`${where}: "${key}" must be a non-empty string`);
    }
    if (typeof m.replace !== 'string') throw new Error(`${where}: "replace" must be a string`);
    if (m.find === m.replace) throw new Error(`${where}: "replace" is the same as "find"`);
    if (m.equivalent === undefined && (!Array.isArray(m.tests) || m.tests.length === 0)) throw new Error(`${where}: "tests" must list the test files that catch it`);
    if (seen.has(m.id!)) throw new Error(`${where}: the id is used twice`);
    seen.add(m.id!);
    return { tests: [], ...m } as Mutant;
  });
}

function occurrences(text: string, snippet: string): number {
  let count = 0;
  for (let at = text.indexOf(snippet); at !== -1; at = text.indexOf(snippet, at + 1)) count++;
  return count;
}

function parseArgs(argv: string[]): { only: Set<string> | undefined; area: string | undefined; check: boolean; list: boolean; noBaseline: boolean } {
  let noBaseline = false;
  let only: Set<string> | undefined;
  let area: string | undefined;
  let check = false;
  let list = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--only') only = new Set([...(only ?? []), ...(argv[++i] ?? '').split(',').filter(Boolean)]);
    else if (arg === '--area') area = argv[++i];
    else if (arg === '--check') check = true;
    else if (arg === '--list') list = true;
    else if (arg === '--no-baseline') noBaseline = true;
    else throw new Error(`unknown argument ${arg}; use --only ID[,ID], --area WORD, --check, --list or --no-baseline`);
  }
  return { only, area, check, list, noBaseline };
}

/** Tracked files (and new ones not ignored) copied into a fresh directory; node_modules is linked, not copied. */
function copyTree(): string {
  const copy = tempDir('iogate-mutants-');
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file !== '' && file !== 'node_modules');
  for (const file of files) {
    const to = join(copy, file);
    mkdirSync(dirname(to), { recursive: true });
    try {
      copyFileSync(join(ROOT, file), to);
    } catch (error) {
      // A tracked file deleted in the working tree is simply not part of the copy.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  return copy;
}

/** The test run in progress: its process group is killed when the runner is stopped (CI's timeout sends SIGINT). */
let running: number | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (running !== undefined) {
      try {
        process.kill(-running, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    console.error(`mutants: stopped by ${signal}`);
    process.exit(130);
  });
}

/** Runs a command in `cwd`; resolves with its exit code, or 'timeout' when it outlived `seconds` (its process group is killed). */
function run(cwd: string, command: string, args: string[], seconds: number, logTo: string[]): Promise<number | 'timeout'> {
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
    const keep = (chunk: Buffer) => {
      logTo.push(chunk.toString());
      if (logTo.length > 400) logTo.splice(0, logTo.length - 400);
    };
    running = child.pid;
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, seconds * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      running = undefined;
      // A mutated test that fails may exit before its after-hooks stop the daemons and simulators it
      // started; they are still in its process group, and must not run on into the next mutant or step.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // The group is empty: nothing was left behind.
      }
      resolvePromise(timedOut ? 'timeout' : code ?? 1);
    });
  });
}

function testArgs(mutant: Mutant): string[] {
  const args = ['--import', 'tsx', '--test', '--test-timeout=20000', '--test-concurrency=1', '--test-reporter=dot'];
  if (mutant.pattern !== undefined) args.push(`--test-name-pattern=${mutant.pattern}`);
  return [...args, ...mutant.tests];
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const all = readMutants();
  const selected = all.filter((m) => (args.only === undefined || args.only.has(m.id)) && (args.area === undefined || m.id.includes(args.area) || m.file.includes(args.area)));
  if (args.only !== undefined) {
    const unknown = [...args.only].filter((id) => !all.some((m) => m.id === id));
    if (unknown.length > 0) throw new Error(`no mutant with id ${unknown.join(', ')} in ${LIST}`);
  }
  if (args.list) {
    for (const m of selected) console.log(`${m.id.padEnd(36)} ${m.file}${m.equivalent ? '  (equivalent)' : m.open ? '  (open: no test yet)' : ''}\n    ${m.why}`);
    return 0;
  }

  // Every snippet, selected or not, must still be found exactly once.
  const missing = new Map<string, string>();
  for (const m of all) {
    let text: string;
    try {
      text = readFileSync(join(ROOT, m.file), 'utf8');
    } catch {
      missing.set(m.id, `${m.file} does not exist`);
      continue;
    }
    const count = occurrences(text, m.find);
    if (count !== 1) missing.set(m.id, `${m.file}: the snippet ${JSON.stringify(m.find)} is found ${count} times, not once; re-anchor it in ${LIST}`);
    for (const test of m.tests) if (!existsSync(join(ROOT, test))) missing.set(m.id, `test file ${test} does not exist`);
  }
  for (const [id, why] of missing) console.error(`snippet missing: ${id}: ${why}`);
  if (args.check) {
    console.log(`${all.length - missing.size} of ${all.length} mutants anchored`);
    return missing.size === 0 ? 0 : 1;
  }

  const copy = copyTree();
  const started = performance.now();
  const buildLog: string[] = [];
  if ((await run(copy, process.execPath, ['build.mjs'], 120, buildLog)) !== 0) throw new Error(`the unmutated tree does not build:\n${buildLog.join('')}`);

  // Baseline: each set of tests passes on the unmutated copy, else a "kill" would mean nothing.
  if (!args.noBaseline) {
    const sets = new Map<string, Mutant>();
    for (const m of selected) if (m.equivalent === undefined && m.open === undefined && !missing.has(m.id)) sets.set(testArgs(m).join('\0'), m);
    for (const m of sets.values()) {
      let log: string[] = [];
      let code = await run(copy, process.execPath, testArgs(m), m.timeout ?? 180, log);
      // Once more before giving up: on a loaded machine a timing test may miss by a hair.
      if (code !== 0) code = await run(copy, process.execPath, testArgs(m), m.timeout ?? 180, (log = []));
      if (code !== 0) throw new Error(`baseline: ${m.tests.join(' ')}${m.pattern ? ` (--test-name-pattern=${m.pattern})` : ''} fails without any mutant (${code}); fix that first:\n${log.join('').slice(-3000)}`);
    }
    console.log(`baseline: ${sets.size} test sets pass unmutated (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }

  const results: { mutant: Mutant; outcome: Outcome; seconds: number }[] = [];
  for (const mutant of selected) {
    if (missing.has(mutant.id)) {
      results.push({ mutant, outcome: 'snippet missing', seconds: 0 });
      continue;
    }
    if (mutant.equivalent !== undefined) {
      results.push({ mutant, outcome: 'equivalent (not run)', seconds: 0 });
      continue;
    }
    if (mutant.open !== undefined) {
      results.push({ mutant, outcome: 'open (no test yet)', seconds: 0 });
      continue;
    }
    const path = join(copy, mutant.file);
    const original = readFileSync(path, 'utf8');
    const begun = performance.now();
    const log: string[] = [];
    let outcome: Outcome;
    try {
      writeFileSync(path, original.replace(mutant.find, () => mutant.replace));
      let code: number | 'timeout' = 0;
      if (mutant.build) code = await run(copy, process.execPath, ['build.mjs'], 120, log);
      // A mutant that breaks the build is caught by the build.
      if (code === 0) code = await run(copy, process.execPath, testArgs(mutant), mutant.timeout ?? 180, log);
      outcome = code === 'timeout' ? 'timeout (killed)' : code === 0 ? 'survived' : 'killed';
    } finally {
      writeFileSync(path, original);
    }
    // The bundle goes back to the unmutated source too.
    if (mutant.build && (await run(copy, process.execPath, ['build.mjs'], 120, [])) !== 0) throw new Error('the unmutated tree no longer builds');
    const seconds = (performance.now() - begun) / 1000;
    results.push({ mutant, outcome, seconds });
    console.log(`${outcome.padEnd(18)} ${seconds.toFixed(1).padStart(6)} s  ${mutant.id}`);
    if (outcome === 'survived' && process.env['MUTANTS_VERBOSE']) console.log(log.join('').slice(-4000));
  }

  console.log('\n| mutant | file | result | s |\n| --- | --- | --- | --- |');
  for (const { mutant, outcome, seconds } of results) console.log(`| ${mutant.id} | ${mutant.file} | ${outcome} | ${seconds.toFixed(1)} |`);
  const count = (outcome: Outcome) => results.filter((r) => r.outcome === outcome).length;
  const survivors = results.filter((r) => r.outcome === 'survived');
  const open = results.filter((r) => r.outcome === 'open (no test yet)');
  const failedMissing = missing.size;
  console.log(
    `\n${selected.length} mutants in ${((performance.now() - started) / 1000).toFixed(0)} s: ${count('killed')} killed, ${count('timeout (killed)')} timed out (killed), ` +
      `${survivors.length} survived, ${count('equivalent (not run)')} equivalent, ${count('open (no test yet)')} open, ${failedMissing} snippets missing`,
  );
  for (const { mutant } of open) console.log(`OPEN ${mutant.id} (${mutant.file}): no test catches it yet: ${mutant.open}`);
  for (const { mutant } of survivors) console.log(`SURVIVED ${mutant.id} (${mutant.file}): ${mutant.why}\n  no test in ${mutant.tests.join(' ')} fails with ${JSON.stringify(mutant.replace)}`);
  // The plain closing line: killed mutants pass; survivors, open mutants and missing snippets fail.
  console.log(`mutants: ${count('killed') + count('timeout (killed)')} passed, ${survivors.length + open.length + failedMissing} failed`);
  return survivors.length === 0 && open.length === 0 && failedMissing === 0 ? 0 : 1;
}


main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`mutants: ${(error as Error).message}`);
    process.exit(2);
  },
);
