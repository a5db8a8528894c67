import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { renderMetrics } from '../../src/api/http/metrics.js';
import type { ConnectFailureReason } from '../../src/api/mqtt/connect-failure.js';
import { startGateway, type Gateway } from '../helpers/mqtt-gateway.js';
import { Mosquitto, sleep, type Subscriber } from '../helpers/mosquitto.js';
import { TestPki, type Issued } from '../helpers/test-pki.js';
import { tlsBrokerConfig } from '../helpers/tls-broker.js';

// The MQTT mirror against Mosquitto over TLS, with the broker demanding a
// client certificate, taking its CN as the user name and granting topics by
// ACL. Outputs are judged at the simulated board; what the broker carries is
// watched with mosquitto_sub holding a certificate of its own.

const DO_REGISTER = 1;
let pki: TestPki;
let server: Issued;
let plc: Issued;
let watcherCert: Issued;
let broker: Mosquitto;
let watcher: Subscriber;

/** The TLS listener of test/helpers/tls-broker.ts, with this file's CA. */
function brokerConfig(port: number, files: { server: Issued; acl: string; crl?: boolean }): string {
  return tlsBrokerConfig(port, { pki, ...files });
}

const GOOD_ACL = 'user plc1\ntopic readwrite plc1/#\ntopic write homeassistant/#\n\nuser watcher\ntopic read #\ntopic write plc1/cmd/#\n';

function watcherArgs(): string[] {
  // The test's own eyes: hostname checking of mosquitto_sub is not under test.
  return ['--cafile', pki.caFile, '--cert', watcherCert.cert, '--key', watcherCert.key, '--insecure'];
}

function tlsLines(files: { ca?: string; cert: string; key: string }): string {
  return `    tls:\n      ca: ${files.ca ?? pki.caFile}\n      cert: ${files.cert}\n      key: ${files.key}`;
}

/** `qos`: of everything the mirror publishes (the config's default is 0). */
async function gatewayWith(port: number, client: Issued, options: { ca?: string; clientId?: string; qos?: 0 | 1 } = {}): Promise<Gateway> {
  const discovery = '    homeassistant:\n      enabled: true';
  const qos = options.qos === undefined ? '' : `\n    qos: ${options.qos}`;
  return startGateway({ port, clientId: options.clientId ?? 'plc1', protocol: 'auto', extra: `${tlsLines({ ...client, ca: options.ca })}\n${discovery}${qos}` });
}

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const metricsOf = (gateway: Gateway) => renderMetrics({ buses: [], slaves: [], mqtt: () => gateway.bridge.stats() });

/**
 * The failure is logged with its cause, counted under its reason, and tried
 * again, each time later than the last; the process carries on.
 */
async function expectFailure(gateway: Gateway, reason: ConnectFailureReason, logged: RegExp): Promise<void> {
  const line = await until(`a log line for ${reason}`, () => gateway.log.find((text) => text.includes(`[${reason}]`)));
  assert.match(line, logged);
  assert.match(line, /WARN|ERROR/);
  await until(`three attempts failing with ${reason}`, () => (gateway.bridge.stats().failures[reason] ?? 0) >= 3);
  assert.equal(gateway.bridge.stats().connected, false);
  const delays = gateway.log.filter((text) => text.includes(`[${reason}]`)).map((text) => Number(/retrying in ([\d.]+) s/.exec(text)?.[1]));
  assert.ok(delays.length >= 3 && delays[2]! > delays[0]!, `the retries back off: ${delays.join(', ')}`);
  assert.match(metricsOf(gateway), new RegExp(`^iogate_mqtt_connect_failures_total\\{reason="${reason}"\\} [3-9]`, 'm'));
  assert.match(metricsOf(gateway), /^iogate_mqtt_connected 0$/m);
}

before(async () => {
  pki = TestPki.create('mqtt');
  server = pki.issue('broker', 'server', { altNames: 'IP:127.0.0.1' });
  plc = pki.issue('plc1', 'client');
  watcherCert = pki.issue('watcher', 'client');
  broker = await Mosquitto.startWith((port) => brokerConfig(port, { server, acl: GOOD_ACL }), watcherArgs());
  watcher = broker.subscribe(['plc1/#', 'homeassistant/#']);
});

after(async () => {
  watcher?.close();
  await broker?.stop();
});

test('with a client certificate the mirror publishes states and discovery, and a command switches the output', async () => {
  const gateway = await gatewayWith(broker.port, plc);
  try {
    await watcher.waitFor('plc1/status', (payload) => payload === 'online', 30_000);
    assert.ok(gateway.log.some((line) => line.includes('MQTT: connected to mqtts://127.0.0.1')));
    const state = JSON.parse((await watcher.waitFor('plc1/event/do/1_01')).payload);
    assert.equal(state.circuit, '1_01');
    const discovered = await until('a discovery config', () => watcher.lines.find((line) => line.topic.startsWith('homeassistant/') && line.topic.endsWith('/config')));
    assert.ok(JSON.parse(discovered.payload).state_topic);
    const before = gateway.board.get('holding', DO_REGISTER);
    assert.equal(before & 1, 0);
    await broker.publish('plc1/cmd/do/1_01', '{"value": 1}');
    await until('DO 1_01 on at the simulated board', () => (gateway.board.get('holding', DO_REGISTER) & 1) === 1);
    await watcher.waitFor('plc1/ack/do/1_01', (payload) => JSON.parse(payload).success === true);
    assert.match(metricsOf(gateway), /^iogate_mqtt_connected 1$/m);
  } finally {
    await gateway.stop();
  }
});

test("a CA that did not sign the broker's certificate: refused, logged, counted, retried", async () => {
  const other = TestPki.create('other');
  const gateway = await gatewayWith(broker.port, plc, { ca: other.caFile });
  try {
    await expectFailure(gateway, 'server_untrusted', /not signed by a trusted CA/);
  } finally {
    await gateway.stop();
  }
});

test('a client certificate from a CA the broker does not know: unknown CA', async () => {
  const stranger = TestPki.create('stranger').issue('plc1', 'client');
  const gateway = await gatewayWith(broker.port, stranger);
  try {
    await expectFailure(gateway, 'client_cert_unknown_ca', /unknown CA/);
  } finally {
    await gateway.stop();
  }
});

test('an expired client certificate is refused by the broker and named as such', async () => {
  const expired = pki.issue('plc1-expired', 'client', { expired: true });
  const gateway = await gatewayWith(broker.port, expired);
  try {
    await expectFailure(gateway, 'client_cert_expired', /expired/);
  } finally {
    await gateway.stop();
  }
});

test('a revoked client certificate is refused (Mosquitto crlfile)', async () => {
  const revoked = pki.issue('plc1-revoked', 'client');
  pki.revoke(revoked);
  // Mosquitto reads the CRL when it starts.
  await broker.stop();
  await broker.restart();
  const gateway = await gatewayWith(broker.port, revoked);
  try {
    await expectFailure(gateway, 'client_cert_revoked', /revoked/);
  } finally {
    await gateway.stop();
  }
});

test('a broker certificate for another name is refused by default, and a fixed broker is picked up', async () => {
  const misnamed = pki.issue('elsewhere', 'server', { altNames: 'DNS:elsewhere.example' });
  const other = await Mosquitto.startWith((port) => brokerConfig(port, { server: misnamed, acl: GOOD_ACL }), watcherArgs());
  const seen = other.subscribe('plc1/status');
  const gateway = await gatewayWith(other.port, plc);
  try {
    await expectFailure(gateway, 'hostname_mismatch', /another name/);
    // The operator fixes the broker's certificate: the next attempt gets through.
    other.reconfigure(brokerConfig(other.port, { server, acl: GOOD_ACL }));
    await other.stop();
    await other.restart();
    await seen.waitFor('plc1/status', (payload) => payload === 'online', 60_000);
    await until('connected', () => gateway.bridge.stats().connected);
  } finally {
    seen.close();
    await gateway.stop();
    await other.stop();
  }
});

test('an ACL that denies the command topics: Mosquitto grants the subscription but delivers nothing; with the ACL fixed, commands arrive after the broker restarts', async () => {
  // Mosquitto 2.0's acl_file answers a denied SUBSCRIBE with a success code and
  // filters what it delivers, so iogate cannot see the denial (docs/mqtt.md).
  // A broker that refuses in its SUBACK gets a logged, counted and retried
  // subscription (test/unit/mqtt/broker-refusals.test.ts).
  const deniedAcl = 'user plc1\ntopic deny plc1/cmd/#\ntopic write plc1/#\ntopic write homeassistant/#\n\nuser watcher\ntopic read #\ntopic write plc1/cmd/#\n';
  const strict = await Mosquitto.startWith((port) => brokerConfig(port, { server, acl: deniedAcl }), watcherArgs());
  const seen = strict.subscribe('plc1/#');
  const gateway = await gatewayWith(strict.port, plc);
  try {
    // States still go out: the ACL lets the mirror publish.
    await seen.waitFor('plc1/event/do/1_02', () => true, 30_000);
    await strict.publish('plc1/cmd/do/1_02', '{"value": 1}');
    // The fix: a good ACL, and the broker restarted; iogate reconnects and subscribes anew.
    // (Mosquitto 2.0.11 keeps a subscription it denied dead even after a SIGHUP reload.)
    strict.reconfigure(brokerConfig(strict.port, { server, acl: GOOD_ACL }));
    await strict.stop();
    await strict.restart();
    const deadline = Date.now() + 60_000;
    while ((gateway.board.get('holding', DO_REGISTER) & 2) === 0) {
      if (Date.now() > deadline) throw new Error('the command never arrived after the ACL was fixed');
      await strict.publish('plc1/cmd/do/1_03', '{"value": 0}');
      await strict.publish('plc1/cmd/do/1_02', '{"value": 1}');
      await seen.waitFor('plc1/ack/do/1_03', () => true, 2000).catch(() => undefined);
    }
  } finally {
    seen.close();
    await gateway.stop();
    await strict.stop();
  }
});

test('an ACL that denies the state topics, MQTT 5 at QoS 1: each refusal (PUBACK 0x87) is logged and counted, and the states reach the broker once the ACL is fixed and reloaded', async () => {
  // Mosquitto 2.0 answers a denied QoS 1 publish of an MQTT 5 client with
  // PUBACK reason code 0x87; at QoS 0 or over 3.1.1 it drops it unseen.
  const deniedAcl = 'user plc1\ntopic deny plc1/event/#\ntopic readwrite plc1/#\ntopic write homeassistant/#\n\nuser watcher\ntopic read #\ntopic write plc1/cmd/#\n';
  let config = '';
  const strict = await Mosquitto.startWith((port) => (config = brokerConfig(port, { server, acl: deniedAcl })), watcherArgs());
  const seen = strict.subscribe('plc1/#');
  const gateway = await gatewayWith(strict.port, plc, { qos: 1 });
  try {
    const line = await until('a refused publish logged', () => gateway.log.find((text) => text.includes('[publish_denied]')));
    assert.match(line, /^WARNING MQTT: the broker refused a publish to plc1\/event\/[^ ]+: not authorized \(ACL\) \[publish_denied\] \(reason code 0x87\); retained, so sent again in 1 s/);
    assert.match(metricsOf(gateway), /^iogate_mqtt_connect_failures_total\{reason="publish_denied"\} [1-9]/m);
    // Not a lost connection: the rest goes on (status, commands).
    await seen.waitFor('plc1/status', (payload) => payload === 'online');
    assert.match(metricsOf(gateway), /^iogate_mqtt_connected 1$/m);
    assert.equal(seen.lines.filter((one) => one.topic.startsWith('plc1/event/')).length, 0);
    // Refused again on each retry (the delays grow), and logged at most once a minute.
    const refused = gateway.bridge.stats().failures.publish_denied!;
    await until('a retry refused again', () => gateway.bridge.stats().failures.publish_denied! > refused);
    assert.equal(gateway.log.filter((text) => text.includes('[publish_denied]')).length, 1);
    // The operator fixes the ACL and reloads Mosquitto (SIGHUP): no reconnect, the retained states arrive.
    // The ACL file is rewritten in place, and Mosquitto told to read it again.
    writeFileSync(/^acl_file (.+)$/m.exec(config)![1]!, GOOD_ACL);
    strict.reload();
    const state = await seen.waitFor('plc1/event/do/1_01', () => true, 60_000);
    assert.equal(state.retained, false);
    assert.equal(JSON.parse(state.payload).circuit, '1_01');
    assert.equal((await strict.retainedOn('plc1/event/do/1_01')) !== '', true, 'the broker holds the state as retained');
    assert.equal(gateway.log.filter((text) => text.includes('MQTT: connected to')).length, 1, 'the same connection throughout');
  } finally {
    seen.close();
    await gateway.stop();
    await strict.stop();
  }
});
