// A configuration the daemon must not start with. The message lists every
// problem found, each naming file:line and the key path, so the user can fix
// them all in one edit instead of restarting once per mistake.
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    const heading = problems.length === 1 ? 'Invalid configuration:' : `Invalid configuration (${problems.length} problems):`;
    super([heading, ...problems.map((problem) => `  ${problem}`)].join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
