import { EXIT_SOFTWARE } from './exit-codes.js';

// The process policy for an exception nothing caught, or a rejection nobody
// handled: log it with its stack and exit with EX_SOFTWARE, to be restarted by
// systemd (Restart=on-failure; the unit has no start limit, see
// docs/security.md "Process policy").
//
// Not "log and continue": such an exception ends whatever was running
// half-way (a bus queue waiting for a reply it will never take, a poll loop
// that stopped, a write gate holding a slot), and a daemon that still answers
// HTTP but no longer polls serves stale values as live. A restart is safe by
// design: nothing switches by itself at start, no command is replayed, and
// aliases are saved within a second of a change. Errors that clients cause
// (a reset, a broken pipe, a bad frame) never get here: they are handled
// where they occur, logged at DEBUG and counted.

export function exitOnUnexpectedErrors(write: (line: string) => void, exit: (code: number) => void = (code) => process.exit(code)): void {
  let exiting = false;
  process.on('uncaughtException', (error: unknown, origin: string) => {
    // A second one while the first is being reported changes nothing.
    if (exiting) return;
    exiting = true;
    const what = origin === 'unhandledRejection' ? 'unhandled promise rejection' : 'uncaught exception';
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    write(`CRITICAL ${what}: ${detail}\n`);
    write(`CRITICAL iogate exits with status ${EXIT_SOFTWARE} (internal error) to be restarted in a known state\n`);
    exit(EXIT_SOFTWARE);
  });
}
