import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { BUNDLE } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// HTTPS and WSS on iogate's own port with certificates from files, against
// node's TLS clients and the ws client: same routes, plain HTTP refused,
// garbage handshakes harmless, a renewed certificate applied by a reload
// without dropping an open connection. The certificates are made with
// openssl; without it these tests are skipped.

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function makeCertificate(dir: string, name: string): void {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.pem`), '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
}

function fingerprintOf(file: string): string {
  return /=([0-9A-F:]+)/.exec(execFileSync('openssl', ['x509', '-in', file, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' }))![1]!;
}

function get(port: number, path: string, ca: Buffer, agent?: import('node:https').Agent): Promise<{ status: number; text: string; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, ca, agent: agent ?? false }, (res) => {
      let text = '';
      // Read now: a keep-alive socket goes back to its agent once the reply ended.
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, text, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HTTPS on the API port', { skip: !hasOpenssl && 'openssl is not installed' }, () => {
  let child: ChildProcess;
  let output = '';
  let port = 0;
  let dir = '';
  let ca: Buffer;

  before(async () => {
    ({ dir } = configFile(['apis:', '  websocket: {enabled: true}', '  tls: {cert: tls.pem, key: tls.key}', SIMULATED_BUS].join('\n'), 'iogate-https-'));
    makeCertificate(dir, 'tls');
    ca = readFileSync(join(dir, 'tls.pem'));
    child = endWithThisProcess(spawn(process.execPath, [BUNDLE, '--config', join(dir, 'config.yaml'), '--port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
    child.stderr!.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: string) => {
        output += chunk;
        const match = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (match) {
          port = Number(match[1]);
          resolve();
        }
      });
      child.once('exit', () => reject(new Error(`daemon exited:\n${output}`)));
    });
  });

  after(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  test('the start-up log names the certificate by its SHA-256 fingerprint', () => {
    assert.ok(output.includes(fingerprintOf(join(dir, 'tls.pem'))), output);
  });

  test('the same routes over HTTPS, at TLS 1.2 or later', async () => {
    const reply = await get(port, '/rest/do/1_01', ca);
    assert.equal(reply.status, 200);
    assert.equal(JSON.parse(reply.text).circuit, '1_01');
    const old = tlsConnect({ host: '127.0.0.1', port, ca, maxVersion: 'TLSv1.1', minVersion: 'TLSv1' });
    const [error] = (await once(old, 'error')) as [Error];
    assert.match(error.message, /protocol|version|alert/i);
  });

  test('plain HTTP on the TLS port gets one clear 400 and is closed', async () => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.end('GET /rest/all HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    let text = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    await once(socket, 'close');
    assert.match(text, /^HTTP\/1\.1 400 /);
    assert.match(text, /TlsRequired/);
  });

  test('garbage and truncated handshakes end only their own connection', async () => {
    for (const bytes of [Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3]), Buffer.from([0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), Buffer.from([0x16])]) {
      const socket = tcpConnect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.end(bytes);
      await once(socket, 'close');
    }
    assert.equal((await get(port, '/version', ca)).status, 200);
  });

  test('WSS: a WebSocket client over TLS gets the device list', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${port}/ws`, { ca });
    await once(ws, 'open');
    ws.send(JSON.stringify({ cmd: 'full', dev: 'do', circuit: '1_01' }));
    const [data] = (await once(ws, 'message')) as [Buffer];
    assert.match(String(data), /"circuit":"1_01"/);
    ws.close();
    await once(ws, 'close');
  });

  test('a reload with a renewed certificate applies it to new connections and keeps open ones', async () => {
    const before = await get(port, '/version', ca);
    // An open connection, made before the reload, used after it.
    const open = tlsConnect({ host: '127.0.0.1', port, ca });
    await once(open, 'secureConnect');
    const openFingerprint = open.getPeerCertificate().fingerprint256;
    makeCertificate(dir, 'tls');
    const renewed = readFileSync(join(dir, 'tls.pem'));
    child.kill('SIGHUP');
    for (const deadline = Date.now() + 10_000; !output.includes('HTTPS certificate renewed'); ) {
      assert.ok(Date.now() < deadline, output.slice(-1500));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    let text = '';
    open.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    open.end('GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    await once(open, 'close');
    assert.match(text, /^HTTP\/1\.1 200 /, 'the open connection is still served');
    assert.equal(openFingerprint, before.fingerprint);
    const fresh = await get(port, '/version', renewed);
    assert.equal(fresh.fingerprint, fingerprintOf(join(dir, 'tls.pem')));
    assert.notEqual(fresh.fingerprint, before.fingerprint);
  });
});
