import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { tempDir } from '../../helpers/temp-dir.js';
import { ensureSelfSigned, selfSignedFiles } from '../../../src/tls/self-signed-store.js';
import { machineNames } from '../../../src/tls/machine-names.js';
import { objectIdentifier, time, unsignedInteger } from '../../../src/tls/der.js';

// The generated certificate, judged by node:crypto's X.509 parser and a real
// TLS handshake (the interop suite adds openssl's own view of it).

const NAMES = ['plc', 'plc.local', 'localhost', '127.0.0.1', '::1', '192.168.7.5', 'fd00::7:5'];

describe('DER encoding', () => {
  test('object identifiers, integers and times encode as X.690 says', () => {
    assert.equal(objectIdentifier('1.2.840.10045.4.3.2').toString('hex'), '06082a8648ce3d040302');
    assert.equal(unsignedInteger(Buffer.from([0x80])).toString('hex'), '02020080');
    assert.equal(unsignedInteger(Buffer.from([0, 0, 5])).toString('hex'), '020105');
    assert.equal(time(new Date(Date.UTC(2026, 0, 2, 3, 4, 5))).toString('ascii', 2), '260102030405Z');
    // From 2050 on, GeneralizedTime (tag 0x18) with a four-digit year.
    const late = time(new Date(Date.UTC(2050, 0, 1)));
    assert.equal(late[0], 0x18);
    assert.equal(late.toString('ascii', 2), '20500101000000Z');
  });
});

describe('self-signed certificate in state_dir', () => {
  test('is a valid v3 leaf for the names, CA:false, server auth, ten years, key 0600', async () => {
    const files = selfSignedFiles(tempDir('iogate-selfsigned-'));
    const now = new Date();
    assert.deepEqual(await ensureSelfSigned(files, NAMES, now), { madeBecause: 'none was stored yet' });
    const cert = new X509Certificate(readFileSync(files.cert));
    assert.equal(cert.ca, false);
    assert.ok(cert.verify(cert.publicKey), 'signed by its own key');
    assert.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(files.key))));
    assert.equal(cert.checkHost('plc.local'), 'plc.local');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkIP('192.168.7.5'), '192.168.7.5');
    assert.equal(cert.checkIP('::1'), '::1');
    assert.equal(cert.checkIP('fd00::7:5'), 'fd00::7:5');
    assert.equal(cert.checkHost('elsewhere.example'), undefined);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
    assert.equal(cert.publicKey.asymmetricKeyType, 'ec');
    const years = (new Date(cert.validTo).getTime() - now.getTime()) / (365.25 * 86_400_000);
    assert.ok(years > 9.9 && years < 10.1, `valid ${years} years`);
    assert.equal(statSync(files.key).mode & 0o777, 0o600);
  });

  test('a TLS client that trusts it connects by name and by address', async () => {
    const files = selfSignedFiles(tempDir('iogate-selfsigned-'));
    await ensureSelfSigned(files, NAMES);
    const server = createServer({ cert: readFileSync(files.cert), key: readFileSync(files.key) }, (socket) => socket.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      for (const servername of ['localhost', undefined]) {
        const socket = connect({ host: '127.0.0.1', port, ca: readFileSync(files.cert), ...(servername ? { servername } : {}) });
        const [chunk] = (await once(socket, 'data')) as [Buffer];
        assert.equal(chunk.toString(), 'ok');
        assert.equal(socket.authorized, true);
        socket.destroy();
      }
    } finally {
      server.close();
    }
  });

  test('is reused on the next start, and made anew only when missing, broken, expiring or short of a name', async () => {
    const files = selfSignedFiles(tempDir('iogate-selfsigned-'));
    await ensureSelfSigned(files, NAMES);
    const first = new X509Certificate(readFileSync(files.cert)).fingerprint256;
    assert.deepEqual(await ensureSelfSigned(files, NAMES), {}, 'same names: reused');
    assert.deepEqual(await ensureSelfSigned(files, NAMES.slice(0, 3)), {}, 'a name gone: still covered, reused');
    assert.equal(new X509Certificate(readFileSync(files.cert)).fingerprint256, first);

    const added = await ensureSelfSigned(files, [...NAMES, '10.0.0.9']);
    assert.match(added.madeBecause ?? '', /does not cover 10\.0\.0\.9/);
    assert.notEqual(new X509Certificate(readFileSync(files.cert)).fingerprint256, first);

    const nineYearsOn = new Date(Date.now() + 9.95 * 365.25 * 86_400_000);
    assert.match((await ensureSelfSigned(files, [...NAMES, '10.0.0.9'], nineYearsOn)).madeBecause ?? '', /expires/);

    writeFileSync(files.cert, 'not a certificate');
    assert.match((await ensureSelfSigned(files, NAMES)).madeBecause ?? '', /cannot be read/);

    const other = selfSignedFiles(tempDir('iogate-selfsigned-'));
    await ensureSelfSigned(other, NAMES);
    writeFileSync(files.key, readFileSync(other.key));
    assert.match((await ensureSelfSigned(files, NAMES)).madeBecause ?? '', /does not fit/);
    assert.deepEqual(await ensureSelfSigned(files, NAMES), {});
  });

  test("the machine's names include localhost and its loopback addresses, never a zoned link-local one", () => {
    const names = machineNames();
    assert.ok(names.includes('localhost'));
    assert.ok(names.includes('127.0.0.1'));
    assert.ok(!names.some((name) => /^fe[89ab]/i.test(name)));
  });
});
