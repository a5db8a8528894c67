// Replaced at build time from package.json; the fallback serves runs from source.
declare const IOGATE_VERSION: string | undefined;

export const VERSION: string = typeof IOGATE_VERSION === 'string' ? IOGATE_VERSION : '0.0.0-dev';
