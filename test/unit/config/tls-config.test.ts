import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/config/errors.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';

// `apis.tls` and `audit` as the configuration reader takes them: paths
// against the file's folder, unreadable or half-given TLS settings refused
// with the key named, never a silent fall-back to plain HTTP.

const load = (apis: string) => {
  const { dir, file } = configFile(`apis:\n${apis}\n${SIMULATED_BUS}`, 'iogate-tls-config-');
  return { dir, run: () => loadConfig({ file }) };
};

test('cert and key are resolved against the config folder', () => {
  const { dir, run } = load('  tls: {cert: c.pem, key: k.pem}');
  writeFileSync(join(dir, 'c.pem'), 'x');
  writeFileSync(join(dir, 'k.pem'), 'x');
  assert.deepEqual(run().config.apis.tls, { cert: join(dir, 'c.pem'), key: join(dir, 'k.pem') });
});

test('a missing file, a missing key, or self_signed beside cert and key are configuration errors naming apis.tls', () => {
  for (const apis of ['  tls: {cert: nowhere.pem, key: nowhere.key}', '  tls: {cert: c.pem}', '  tls: {self_signed: true, cert: c.pem}']) {
    const { dir, run } = load(apis);
    writeFileSync(join(dir, 'c.pem'), 'x');
    assert.throws(run, (error: unknown) => error instanceof ConfigError && /apis\.tls/.test(error.message), apis);
  }
});

test("self_signed: true serves state_dir's generated pair", () => {
  const { dir, run } = load('  tls: {self_signed: true}\nstate_dir: state');
  assert.deepEqual(run().config.apis.tls, { cert: join(dir, 'state', 'tls', 'self-signed-cert.pem'), key: join(dir, 'state', 'tls', 'self-signed-key.pem'), selfSigned: true });
});

test('audit.max_mb: 20 MB by default, 0 turns it off, a negative is refused', () => {
  const { file } = configFile(`audit: {max_mb: 0}\n${SIMULATED_BUS}`, 'iogate-tls-config-');
  assert.equal(loadConfig({ file }).config.audit?.maxBytes, 0);
  const { file: plain } = configFile(SIMULATED_BUS, 'iogate-tls-config-');
  assert.equal(loadConfig({ file: plain }).config.audit?.maxBytes, 20 * 1024 * 1024);
  const { file: negative } = configFile(`audit: {max_mb: -1}\n${SIMULATED_BUS}`, 'iogate-tls-config-');
  assert.throws(() => loadConfig({ file: negative }), ConfigError);
});
