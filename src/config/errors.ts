import { userInfo } from 'node:os';

// A configuration the daemon must not start with. The message lists every
// problem found, each naming file:line and the key path, so the user can fix
// them all in one edit instead of restarting once per mistake.
export class ConfigError extends Error {
  readonly problems: readonly string[];

  /** `heading` replaces "Invalid configuration" when the file is fine but cannot be had (missing, unreadable). */
  constructor(problems: readonly string[], heading = 'Invalid configuration') {
    const title = problems.length === 1 ? `${heading}:` : `${heading} (${problems.length} problems):`;
    super([title, ...problems.map((problem) => `  ${problem}`)].join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** A file named by the configuration or the command line that cannot be read, in plain words. */
export function unreadableFile(file: string, error: NodeJS.ErrnoException): ConfigError {
  const reason =
    error.code === 'ENOENT' ? 'no such file'
    : error.code === 'EACCES' ? `permission denied for user ${userName()} (check the file's owner and mode)`
    : error.code === 'EISDIR' ? 'is a directory, not a file'
    : error.message;
  return new ConfigError([`${file}: ${reason}`], 'Cannot read the configuration');
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return String(process.getuid?.() ?? '?');
  }
}
