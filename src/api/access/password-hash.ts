import { randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// Panel users' passwords, stored as `scrypt$N$r$p$<salt>$<key>` (salt and key
// in base64url). The parameters travel with the hash so that raising them
// later leaves the hashes already written in configuration files valid.

/** 2^15: about 50-100 ms and 32 MiB on a Raspberry Pi-class CPU, slow enough to make guessing costly. */
const DEFAULT_N = 1 << 15;
const DEFAULT_R = 8;
const DEFAULT_P = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Bounds on what a hash may ask for, so a typo in the file cannot make each login cost a gigabyte. */
const MAX_N = 1 << 20;
const MAX_R = 32;
const MAX_P = 16;

export interface ParsedHash {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/** The hash text for a password, with a fresh random salt. */
export function hashPassword(password: string, options: { n?: number; r?: number; p?: number } = {}): string {
  const n = options.n ?? DEFAULT_N;
  const r = options.r ?? DEFAULT_R;
  const p = options.p ?? DEFAULT_P;
  const salt = randomBytes(SALT_BYTES);
  const key = scryptSync(password.normalize('NFC'), salt, KEY_BYTES, scryptOptions(n, r, p));
  return `scrypt$${n}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** The parsed hash, or a sentence saying what is wrong with it (for the configuration's error list). */
export function parsePasswordHash(text: string): ParsedHash | string {
  const parts = text.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return 'is not a password hash made by "iogate --hash-password" (expected scrypt$N$r$p$salt$key)';
  const [n, r, p] = parts.slice(1, 4).map((part) => (/^\d{1,8}$/.test(part) ? Number(part) : NaN)) as [number, number, number];
  if (!(n >= 2 && n <= MAX_N && (n & (n - 1)) === 0)) return `has a scrypt cost N of ${parts[1]}: it must be a power of two from 2 to ${MAX_N}`;
  if (!(r >= 1 && r <= MAX_R)) return `has a scrypt block size r of ${parts[2]}: it must be from 1 to ${MAX_R}`;
  if (!(p >= 1 && p <= MAX_P)) return `has a scrypt parallelism p of ${parts[3]}: it must be from 1 to ${MAX_P}`;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const key = Buffer.from(parts[5]!, 'base64url');
  if (salt.length < 8) return 'has a salt shorter than 8 bytes';
  if (key.length < 16 || key.length > 64) return 'has a key that is not 16 to 64 bytes long';
  return { n, r, p, salt, key };
}

/**
 * Whether the password matches. Asynchronous (scrypt runs on libuv's thread
 * pool), so a login never stalls the event loop that serves the outputs.
 */
export function verifyPassword(password: string, hash: ParsedHash): Promise<boolean> {
  return new Promise((resolvePromise) => {
    scrypt(password.normalize('NFC'), hash.salt, hash.key.length, scryptOptions(hash.n, hash.r, hash.p), (error, derived) => {
      resolvePromise(error === null && timingSafeEqual(derived, hash.key));
    });
  });
}

function scryptOptions(n: number, r: number, p: number): ScryptOptions {
  // Node refuses work needing more than maxmem (32 MiB by default); allow what the parameters need.
  return { N: n, r, p, maxmem: 128 * n * r * p + 1024 * 1024 };
}
