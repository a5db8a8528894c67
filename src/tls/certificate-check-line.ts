// The HTTPS line of `--check-config`: which certificate would be served and its
// SHA-256 fingerprint, so it can be compared with what a browser shows or
// pinned in a client before the daemon runs. Reads only; never makes a certificate.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Config } from '../config/types.js';
import { machineNames } from './machine-names.js';
import { storedProblem } from './self-signed-store.js';

export function certificateCheckLine(tls: Config['apis']['tls'], now = new Date()): string | undefined {
  if (tls === undefined) return undefined;
  if (tls.selfSigned) {
    const problem = storedProblem(tls, machineNames(), now);
    if (problem !== undefined) return `HTTPS: a self-signed certificate will be made in ${tls.cert} at start (${problem})`;
  }
  try {
    const cert = new X509Certificate(readFileSync(tls.cert));
    return `HTTPS: ${tls.selfSigned ? 'self-signed ' : ''}certificate ${tls.cert}, valid until ${cert.validTo}, SHA-256 fingerprint ${cert.fingerprint256}`;
  } catch (error) {
    return `HTTPS: certificate ${tls.cert} cannot be read: ${(error as Error).message}`;
  }
}
