import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dir.js';

// A small certificate authority made with the openssl command-line tool, as an
// operator would make one: server and client certificates, one that expired,
// one revoked (with its CRL), so TLS failures can be tested against a real
// broker. `openssl ca` is used throughout because OpenSSL 3.0's `x509 -req`
// cannot set a start date in the past.

export interface Issued {
  cert: string;
  key: string;
}

export class TestPki {
  private constructor(
    readonly dir: string,
    private readonly config: string,
  ) {}

  get caFile(): string {
    return join(this.dir, 'ca.pem');
  }

  get crlFile(): string {
    return join(this.dir, 'crl.pem');
  }

  static create(name: string): TestPki {
    const dir = tempDir(`iogate-pki-${name}-`);
    // Mosquitto started as root drops to its own user, which must read these files.
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'issued'));
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(join(dir, 'serial'), '1000\n');
    writeFileSync(join(dir, 'crlnumber'), '1000\n');
    const config = join(dir, 'ca.cnf');
    writeFileSync(
      config,
      `[ca]
default_ca = test_ca
[test_ca]
dir = ${dir}
database = $dir/index.txt
new_certs_dir = $dir/issued
serial = $dir/serial
crlnumber = $dir/crlnumber
certificate = $dir/ca.pem
private_key = $dir/ca.key
default_md = sha256
default_days = 30
default_crl_days = 30
policy = any_name
copy_extensions = copy
unique_subject = no
[any_name]
commonName = supplied
[server]
basicConstraints = CA:FALSE
extendedKeyUsage = serverAuth
[client]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
`,
    );
    const pki = new TestPki(dir, config);
    pki.openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'ca.key'), '-out', pki.caFile, '-days', '30', '-subj', `/CN=${name} test CA`]);
    chmodSync(join(dir, 'ca.key'), 0o644);
    pki.gencrl();
    return pki;
  }

  /** A key and a certificate for `cn`; `altNames` like `IP:127.0.0.1`; `expired` dates it in 2020. */
  issue(cn: string, use: 'server' | 'client', options: { altNames?: string; expired?: boolean } = {}): Issued {
    const key = join(this.dir, `${cn}.key`);
    const csr = join(this.dir, `${cn}.csr`);
    const cert = join(this.dir, `${cn}.pem`);
    const san = options.altNames ? ['-addext', `subjectAltName=${options.altNames}`] : [];
    this.openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${cn}`, ...san]);
    const dates = options.expired ? ['-startdate', '20200101000000Z', '-enddate', '20200201000000Z'] : ['-days', '30'];
    this.openssl(['ca', '-batch', '-config', this.config, '-extensions', use, '-in', csr, '-out', cert, ...dates]);
    chmodSync(key, 0o644);
    return { cert, key };
  }

  /** Revokes a certificate this CA issued and writes the CRL anew. */
  revoke(issued: Issued): void {
    this.openssl(['ca', '-batch', '-config', this.config, '-revoke', issued.cert]);
    this.gencrl();
  }

  private gencrl(): void {
    this.openssl(['ca', '-batch', '-config', this.config, '-gencrl', '-out', this.crlFile]);
  }

  private openssl(args: string[]): void {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  }
}
