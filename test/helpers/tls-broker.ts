import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dir.js';
import type { Issued, TestPki } from './test-pki.js';

// Mosquitto configs for the TLS interop tests of the MQTT mirror and the
// Sparkplug edge node: a loopback TLS listener that demands a client
// certificate and takes its CN as the user name, checks a CRL, and grants
// topics either by an ACL file (Mosquitto's default check) or by the
// dynamic-security plugin (which, unlike the ACL file, refuses a denied
// SUBSCRIBE in its SUBACK). Files the broker reads are made readable to the
// user Mosquitto drops to when started as root.

export interface TlsBrokerOptions {
  pki: TestPki;
  /** The broker's own certificate. */
  server: Issued;
  /** The ACL file's text; lines before the first `user` apply to anonymous clients. */
  acl?: string;
  /** The dynamic-security plugin's JSON config (clients, roles, default access), instead of an ACL file. */
  dynamicSecurity?: object;
  /** Check the CA's CRL (default true). */
  crl?: boolean;
  /** Also an anonymous plain listener on this loopback port, for a test's own clients. */
  plainPort?: number;
}

/** The text of a mosquitto.conf with the TLS listener on `port`. */
export function tlsBrokerConfig(port: number, options: TlsBrokerOptions): string {
  const { pki, server, acl, dynamicSecurity, crl = true, plainPort } = options;
  const dir = tempDir('iogate-mosquitto-tls-');
  chmodSync(dir, 0o755);
  const lines = ['persistence false'];
  if (plainPort !== undefined) lines.push('per_listener_settings false', 'allow_anonymous true');
  if (acl !== undefined) {
    const file = join(dir, 'acl');
    writeFileSync(file, acl, { mode: 0o644 });
    lines.push(`acl_file ${file}`);
  }
  if (dynamicSecurity !== undefined) {
    const file = join(dir, 'dynamic-security.json');
    writeFileSync(file, JSON.stringify(dynamicSecurity), { mode: 0o644 });
    lines.push(`plugin ${dynamicSecurityPlugin()}`, `plugin_opt_config_file ${file}`);
  }
  lines.push(
    `listener ${port} 127.0.0.1`,
    `cafile ${pki.caFile}`,
    `certfile ${server.cert}`,
    `keyfile ${server.key}`,
    'require_certificate true',
    'use_identity_as_username true',
  );
  if (crl) lines.push(`crlfile ${pki.crlFile}`);
  if (plainPort !== undefined) lines.push(`listener ${plainPort} 127.0.0.1`);
  return `${lines.join('\n')}\n`;
}

/** Where Debian's mosquitto package puts the dynamic-security plugin (under the multiarch directory). */
export function dynamicSecurityPlugin(): string {
  const name = 'mosquitto_dynamic_security.so';
  const candidates = [join('/usr/lib', name), ...readdirSync('/usr/lib').map((sub) => join('/usr/lib', sub, name))];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new Error(`${name} not found under /usr/lib (Debian's mosquitto package ships it)`);
  return found;
}
