// Replaced at build time from package.json; the fallback serves runs from source.
declare const IOGATE_VERSION: string | undefined;

export const VERSION: string = typeof IOGATE_VERSION === 'string' ? IOGATE_VERSION : '0.0.0-dev';

/**
 * The EVOK release whose API iogate answers as. Clients that read `/version`
 * to choose between EVOK 2's and EVOK 3's API must see a 3.x there.
 */
export const EVOK_API_VERSION = '3.0.6';

/**
 * What `GET /version` answers and `--version` prints (EVOK: `v3.0.6` from
 * both, so scripts that compare the two agree): the EVOK API version with
 * iogate's own as SemVer build metadata, `v3.0.6+iogate.0.1.0`. A client that
 * reads the first three numbers (a regex, SemVer, Python's packaging) gets
 * the API it talks to; a person reads which iogate it is.
 */
export const VERSION_TEXT = `v${EVOK_API_VERSION}+iogate.${VERSION}`;
