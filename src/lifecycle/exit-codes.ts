// Exit codes a supervisor can act on. systemd's unit does not restart on the
// ones that a restart cannot fix (RestartPreventExitStatus=), so a broken
// configuration fails once with its reason instead of looping every few seconds.

/** The command line itself is wrong (unknown flag, bad port number). */
export const EXIT_USAGE = 2;

/** sysexits.h EX_TEMPFAIL: something outside iogate holds what it needs (the port); a later start may succeed. */
export const EXIT_TEMPORARY = 75;

/** sysexits.h EX_CONFIG: the configuration cannot work as written. */
export const EXIT_CONFIG = 78;

/**
 * sysexits.h EX_SOFTWARE: an exception nothing caught, i.e. a bug. The state
 * is unknown, so iogate exits and the unit restarts it (unexpected-error.ts).
 */
export const EXIT_SOFTWARE = 70;
