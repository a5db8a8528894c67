// `apis.tls: {self_signed: true}`: the key and certificate live in state_dir
// and are made once. On each start (and reload) they are reused unless one of
// these holds, in which case a new pair is made (and its new fingerprint
// logged):
// - either file is missing, or does not parse, or the key does not fit the certificate;
// - the certificate has expired or expires within 30 days;
// - a current name or address of the machine is not among its subjectAltNames
//   (a name that went away does not matter: the old certificate still covers the rest).
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { writeFileAtomic } from '../state/atomic-file.js';
import { ipBytes, makeSelfSignedCertificate } from './self-signed-certificate.js';

const VALID_YEARS = 10;
const RENEW_BEFORE_MS = 30 * 86_400_000;
/** Clocks of clients a little behind ours still accept a certificate made just now. */
const BACKDATE_MS = 3_600_000;

export interface SelfSignedFiles {
  cert: string;
  key: string;
}

export function selfSignedFiles(stateDir: string): SelfSignedFiles {
  return { cert: join(stateDir, 'tls', 'self-signed-cert.pem'), key: join(stateDir, 'tls', 'self-signed-key.pem') };
}

export interface EnsureResult {
  /** Why a new pair was made; undefined when the stored one was reused. */
  madeBecause?: string;
}

export async function ensureSelfSigned(files: SelfSignedFiles, names: readonly string[], now = new Date()): Promise<EnsureResult> {
  const problem = storedProblem(files, names, now);
  if (problem === undefined) return {};
  const commonName = names.find((name) => isIP(name) === 0 && name !== 'localhost') ?? 'localhost';
  const made = makeSelfSignedCertificate({
    commonName,
    names,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(Date.UTC(now.getUTCFullYear() + VALID_YEARS, now.getUTCMonth(), now.getUTCDate())),
  });
  // Key first: a cut between the two writes leaves a certificate that no longer fits, which the next start replaces.
  await writeFileAtomic(files.key, made.keyPem, 0o600);
  await writeFileAtomic(files.cert, made.certPem, 0o644);
  return { madeBecause: problem };
}

/** Why the stored pair cannot be reused, or undefined when it can. */
/** Synchronous (two small files) so `--check-config` can tell too. */
export function storedProblem(files: SelfSignedFiles, names: readonly string[], now: Date): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(files.cert));
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(files.key)))) return 'the stored key does not fit the stored certificate';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'none was stored yet' : `the stored one cannot be read (${(error as Error).message})`;
  }
  if (new Date(cert.validTo).getTime() - now.getTime() < RENEW_BEFORE_MS) return `the stored one expires ${cert.validTo}`;
  const covered = new Set((cert.subjectAltName ?? '').split(', ').map((entry) => entry.replace(/^(DNS|IP Address):/, '').toLowerCase()));
  const missing = names.filter((name) => !covered.has(isIP(name) === 6 ? longIpv6(name) : name.toLowerCase()));
  if (missing.length > 0) return `the stored one does not cover ${missing.join(', ')}`;
  return undefined;
}

/** Node prints an IPv6 subjectAltName unabbreviated and in upper case (0:0:0:0:0:0:0:1); compare in that form, lower-cased. */
function longIpv6(address: string): string {
  const bytes = ipBytes(address);
  const groups: string[] = [];
  for (let index = 0; index < 16; index += 2) groups.push(bytes.readUInt16BE(index).toString(16));
  return groups.join(':');
}
