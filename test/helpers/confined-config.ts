import { readFileSync } from 'node:fs';

// Every daemon a test starts keeps its files in the test's temporary folder.
// A config without `alias_file:` would fall back to EVOK's
// /var/lib/evok/alias.yaml, and a test run as root on a controller would
// replace the user's real aliases.

const ALIAS_FILE_KEY = /^alias_file:/m;

/** `yaml` with `alias_file: alias.yaml` (beside the config file) unless it names one. */
export function confinedYaml(yaml: string): string {
  return ALIAS_FILE_KEY.test(yaml) ? yaml : `alias_file: alias.yaml\n${yaml}`;
}

/** Throws when the daemon arguments name a config file that does not set `alias_file:`. */
export function assertConfinedArgs(args: readonly string[]): void {
  const at = args.indexOf('--config');
  if (at < 0) return; // The built-in configuration keeps alias.yaml in the working directory.
  const file = args[at + 1]!;
  if (!ALIAS_FILE_KEY.test(readFileSync(file, 'utf8'))) {
    throw new Error(`${file} has no alias_file: a test daemon would write /var/lib/evok/alias.yaml`);
  }
}
