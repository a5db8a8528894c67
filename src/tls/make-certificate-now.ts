// `iogate --make-certificate`: what start-up does for `self_signed: true`,
// done ahead (the Debian package runs it on install), so the fingerprint can
// be read and handed to clients before the daemon serves anyone.
import { EXIT_CONFIG, EXIT_SOFTWARE } from '../lifecycle/exit-codes.js';
import type { Config } from '../config/types.js';
import { certificateCheckLine } from './certificate-check-line.js';
import { machineNames } from './machine-names.js';
import { ensureSelfSigned } from './self-signed-store.js';

export function makeCertificateNow(tls: Config['apis']['tls']): void {
  if (!tls?.selfSigned) {
    process.stderr.write('iogate: --make-certificate: the configuration does not ask for one (apis.tls: {self_signed: true})\n');
    process.exit(EXIT_CONFIG);
  }
  ensureSelfSigned(tls, machineNames()).then(
    ({ madeBecause }) => {
      process.stdout.write(`${madeBecause === undefined ? 'kept the stored certificate' : `made a new certificate (${madeBecause})`}\n${certificateCheckLine(tls)}\n`);
    },
    (error: unknown) => {
      process.stderr.write(`iogate: --make-certificate: ${(error as Error).message}\n`);
      process.exit(EXIT_SOFTWARE);
    },
  );
}
