import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';

// `logging.file`: the log lines also go to a file, as EVOK's did. PLCs keep
// their files on SD cards, so the file is bounded: past `maxBytes` it becomes
// `<file>.1` (replacing the previous one) and a new file starts. At most
// twice `maxBytes` is ever on disk. Writes are synchronous and only happen for
// log lines (start-up, warnings, bus changes), not per request.

export const LOG_FILE_MAX_BYTES = 1024 * 1024;

export interface LogFile {
  write(line: string): void;
  close(): void;
}

/**
 * Opens (appends to) the file. Throws with the system's reason when it cannot
 * be opened; the caller decides what that means for start-up.
 */
export function openLogFile(path: string, maxBytes = LOG_FILE_MAX_BYTES): LogFile {
  let fd = openSync(path, 'a', 0o640);
  let size = fstatSync(fd).size;
  let broken = false;

  const rotate = () => {
    closeSync(fd);
    renameSync(path, `${path}.1`);
    fd = openSync(path, 'a', 0o640);
    size = 0;
  };

  return {
    write(line: string) {
      if (broken) return;
      const bytes = Buffer.from(line);
      try {
        if (size > 0 && size + bytes.length > maxBytes) rotate();
        writeSync(fd, bytes);
        size += bytes.length;
      } catch (error) {
        // A full or failing card must not take the daemon down: stderr (the
        // journal) still has every line. Say so once.
        broken = true;
        process.stderr.write(`WARNING logging.file ${path}: ${(error as Error).message}; logging to stderr only from now on\n`);
      }
    },
    close() {
      if (!broken) closeSync(fd);
      broken = true;
    },
  };
}
