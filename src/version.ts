// Replaced at build time from package.json; the fallback serves runs from source.
declare const IOGATE_VERSION: string | undefined;

export const VERSION: string = typeof IOGATE_VERSION === 'string' ? IOGATE_VERSION : '0.0.0-dev';

/**
 * The version as EVOK spells it: `GET /version` answers it and `--version`
 * prints it (EVOK: `v3.0.6` from both), so scripts that compare the two agree.
 */
export const VERSION_TEXT = `v${VERSION}`;
