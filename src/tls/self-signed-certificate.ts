// Builds a self-signed X.509 v3 server certificate (RFC 5280) for an EC P-256
// key: the TBSCertificate is DER-encoded here and signed with node:crypto
// (ECDSA with SHA-256). It is a leaf, not a CA: basicConstraints CA:false,
// keyUsage digitalSignature, extKeyUsage serverAuth, and the machine's names
// and addresses as subjectAltName (clients match those, not the CN).
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import {
  bitString,
  boolean,
  explicit,
  implicitPrimitive,
  objectIdentifier,
  octetString,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from './der.js';

const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const COMMON_NAME = '2.5.4.3';
const ORGANIZATION = '2.5.4.10';
const SUBJECT_KEY_IDENTIFIER = '2.5.29.14';
const KEY_USAGE = '2.5.29.15';
const SUBJECT_ALT_NAME = '2.5.29.17';
const BASIC_CONSTRAINTS = '2.5.29.19';
const EXT_KEY_USAGE = '2.5.29.37';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';

export interface SelfSignedOptions {
  /** The subject's common name (the host name). */
  commonName: string;
  /** DNS names and IP addresses (IPv4 or IPv6 text) the certificate is valid for. */
  names: readonly string[];
  notBefore: Date;
  notAfter: Date;
}

export interface SelfSigned {
  /** PKCS#8 PEM. */
  keyPem: string;
  certPem: string;
}

export function makeSelfSignedCertificate(options: SelfSignedOptions): SelfSigned {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const certDer = signedCertificate(options, privateKey, publicKey);
  return {
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certPem: toPem(certDer, 'CERTIFICATE'),
  };
}

function signedCertificate(options: SelfSignedOptions, privateKey: KeyObject, publicKey: KeyObject): Buffer {
  const algorithm = sequence(objectIdentifier(ECDSA_WITH_SHA256));
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const name = sequence(
    set(sequence(objectIdentifier(ORGANIZATION), utf8String('iogate'))),
    set(sequence(objectIdentifier(COMMON_NAME), utf8String(options.commonName))),
  );
  // Positive and at most 20 octets (RFC 5280 4.1.2.2): 16 random bytes with the top bit cleared.
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f | 0x01;
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    unsignedInteger(serial),
    algorithm,
    name,
    sequence(time(options.notBefore), time(options.notAfter)),
    name,
    spki,
    explicit(3, sequence(...extensions(options.names, spki))),
  );
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  return sequence(tbs, algorithm, bitString(signature));
}

function extensions(names: readonly string[], spki: Buffer): Buffer[] {
  const extension = (oid: string, critical: boolean, value: Buffer) =>
    sequence(objectIdentifier(oid), ...(critical ? [boolean(true)] : []), octetString(value));
  const altNames = names.map((entry) =>
    isIP(entry) ? implicitPrimitive(7, ipBytes(entry)) : implicitPrimitive(2, Buffer.from(entry, 'ascii')),
  );
  return [
    // An empty SEQUENCE: cA defaults to FALSE.
    extension(BASIC_CONSTRAINTS, true, sequence()),
    // digitalSignature is bit 0: the first byte 0x80, 7 bits unused.
    extension(KEY_USAGE, true, bitString(Buffer.from([0x80]), 7)),
    extension(EXT_KEY_USAGE, false, sequence(objectIdentifier(SERVER_AUTH))),
    extension(SUBJECT_ALT_NAME, false, sequence(...altNames)),
    // RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits (here the whole SPKI's hash would also do; this is the usual one).
    extension(SUBJECT_KEY_IDENTIFIER, false, octetString(createHash('sha1').update(publicKeyBits(spki)).digest())),
  ];
}

/** The BIT STRING's content at the end of an uncompressed P-256 SPKI: 0x04 || X || Y (65 bytes). */
function publicKeyBits(spki: Buffer): Buffer {
  return spki.subarray(spki.length - 65);
}

/** An address's bytes for an iPAddress subjectAltName: 4 for IPv4, 16 for IPv6. */
export function ipBytes(address: string): Buffer {
  if (isIP(address) === 4) return Buffer.from(address.split('.').map(Number));
  return expandIpv6(address);
}

function expandIpv6(address: string): Buffer {
  const [head = '', tail] = address.split('::');
  const groups = (text: string) => (text === '' ? [] : text.split(':'));
  let left = groups(head);
  let right = tail === undefined ? [] : groups(tail);
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two groups.
  const expandV4 = (list: string[]) => {
    const last = list[list.length - 1];
    if (last === undefined || !last.includes('.')) return list;
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    return [...list.slice(0, -1), ((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  };
  if (tail === undefined) left = expandV4(left);
  else right = expandV4(right);
  const missing = 8 - left.length - right.length;
  const all = [...left, ...Array<string>(Math.max(0, missing)).fill('0'), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16) || 0, index * 2));
  return bytes;
}

function toPem(der: Buffer, label: string): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
