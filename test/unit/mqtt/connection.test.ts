import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The connection settings of `apis.mqtt` reach the broker: credentials and TLS.

test('username and password are used to log in', async () => {
  const broker = await TestBroker.start({ credentials: { username: 'plc', password: 's3cret' } });
  const gateway = await startGateway({ port: broker.port, clientId: 'auth', extra: '    username: plc\n    password: s3cret' });
  try {
    const observer = await Observer.connect(broker.url.replace('mqtt://', 'mqtt://plc:s3cret@'), ['auth/status']);
    await observer.waitFor('auth/status', (text) => text === 'online');
    await observer.close();
    assert.equal(broker.logins[0], 'plc');
  } finally {
    await gateway.stop();
    await broker.stop();
  }
});

test('TLS with the configured CA file', async () => {
  const dir = tempDir('iogate-tls-');
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { stdio: 'ignore' });
  const broker = await TestBroker.start({ tls: { key: readFileSync(key), cert: readFileSync(cert) } });
  const gateway = await startGateway({ port: broker.port, clientId: 'tls', extra: `    tls:\n      ca: ${cert}` });
  try {
    const connected = () => gateway.log.some((line) => line.includes('MQTT: connected to mqtts://127.0.0.1'));
    const deadline = Date.now() + 5000;
    while (!connected() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(connected(), gateway.log.join(''));
    assert.equal(broker.logins.length, 1, 'one TLS connection, no failed attempts');
  } finally {
    await gateway.stop();
    await broker.stop();
  }
});
