// Leveled logging to stderr (journald adds timestamps under systemd).

export type LogLevel = 'CRITICAL' | 'ERROR' | 'WARNING' | 'INFO' | 'DEBUG';

const RANK: Record<LogLevel, number> = { CRITICAL: 50, ERROR: 40, WARNING: 30, INFO: 20, DEBUG: 10 };

export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  debug(message: string): void;
}

/** `level` may be a function, for a level that a configuration reload changes. */
export function createLogger(level: LogLevel | (() => LogLevel), write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const threshold = typeof level === 'function' ? () => RANK[level()] : () => RANK[level];
  const at = (lineLevel: LogLevel) => (message: string) => {
    if (RANK[lineLevel] >= threshold()) write(`${lineLevel} ${message}\n`);
  };
  return { error: at('ERROR'), warn: at('WARNING'), info: at('INFO'), debug: at('DEBUG') };
}
