import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ConnectFailureReason } from '../../src/api/mqtt/connect-failure.js';
import { Mosquitto } from '../helpers/mosquitto.js';
import { TahuHost, type HostMessage } from '../helpers/sparkplug-host.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { TestPki, type Issued } from '../helpers/test-pki.js';
import { tlsBrokerConfig } from '../helpers/tls-broker.js';
import { freePort } from './free-port.js';
import { SparkplugRig, untilTrue, type RigOptions } from './peers/sparkplug-rig.js';

// The Sparkplug edge node against Mosquitto over TLS with client
// certificates (require_certificate, use_identity_as_username, a CRL, an
// ACL). Each case puts a server that refuses the node first in
// `servers[]` and a good one second: the node logs the cause, counts it,
// walks on and is born on the second. Then the good server goes away (a
// relay in front of it is cut): the node keeps walking through the failing
// one (counted again, never a crash or a stall), the inputs change at the
// simulator meanwhile, and once the good server is back those changes reach
// the host as historical DDATA, none lost. The host stays on a plain
// loopback listener of the good broker throughout; outputs are judged at
// the simulator.

const GROUP = 'plant';
const NODE = 'edge1';
const DO_REG = 1;
/** Register of DI 1_01..1_04 at the simulator (bit 0 is DI 1_01). */
const DI_REG = 0;

/** The good broker's ACL: anonymous lines (the host, on the plain listener) first, then the node's user. */
const GOOD_ACL = `topic readwrite spBv1.0/#\n\nuser ${NODE}\ntopic readwrite spBv1.0/${GROUP}/#\ntopic read spBv1.0/STATE/#\n`;

let pki: TestPki;
let serverCert: Issued;
let nodeCert: Issued;
let revokedCert: Issued;
/** Second in every `servers[]`, through `goodPath`: takes the node's certificate and topics. */
let good: Mosquitto;
/** The node's way to the good broker, cut for an outage. */
let goodPath: TcpRelay;
let plainPort: number;
/** First in the wrong-CA, expired and revoked cases: the same set-up as the good one, without the host. */
let first: Mosquitto;
let host: TahuHost;

type Server = Exclude<RigOptions['servers'][number], string>;

const url = (broker: Mosquitto) => `mqtts://127.0.0.1:${broker.port}`;
const goodServer = (): Server => ({ url: `mqtts://127.0.0.1:${goodPath.port}`, ca: pki.caFile, ...nodeCert });

before(async () => {
  pki = TestPki.create('spb');
  serverCert = pki.issue('broker', 'server', { altNames: 'IP:127.0.0.1' });
  nodeCert = pki.issue(NODE, 'client');
  revokedCert = pki.issue(`${NODE}-revoked`, 'client');
  // Revoked before the brokers start: Mosquitto reads the CRL when it starts.
  pki.revoke(revokedCert);
  plainPort = await freePort();
  good = await Mosquitto.startWith((port) => tlsBrokerConfig(port, { pki, server: serverCert, acl: GOOD_ACL, plainPort }));
  goodPath = await TcpRelay.start(good.port);
  first = await Mosquitto.startWith((port) => tlsBrokerConfig(port, { pki, server: serverCert, acl: GOOD_ACL }));
  host = await TahuHost.connect(`mqtt://127.0.0.1:${plainPort}`, GROUP);
});

after(async () => {
  await host?.close();
  await goodPath?.cut();
  await good?.stop();
  await first?.stop();
});

const ours = (type: string, device?: string, from = 0) => (m: HostMessage) =>
  m.index >= from && m.edgeNode === NODE && m.type === type && (device === undefined || m.device === device);

/** DI 1_01 as the daemon last read it (only to pace the steps at the simulator; the host's history is what is judged). */
async function seenDi(rig: SparkplugRig): Promise<number> {
  return ((await (await fetch(`${rig.daemon!.baseUrl}/rest/di/1_01`)).json()) as { value: number }).value;
}

/**
 * The node with `firstServer` ahead of the good one: `reason` is logged
 * (matching `logged`) and counted, the node is born on the good server; then
 * the good server's outage, during which the first one keeps failing, and
 * DI 1_01 going on, off, on at the simulator, arrives as historical DDATA
 * after the next birth.
 */
async function walksOnAndKeepsChanges(firstServer: Server, reason: ConnectFailureReason, logged: RegExp): Promise<void> {
  const mark = host.messages.length;
  const rig = await SparkplugRig.start({ edgeNodeId: NODE, groupId: GROUP, servers: [firstServer, goodServer()] });
  try {
    await host.waitFor(ours('NBIRTH', undefined, mark), 60_000, 'NBIRTH on the second server');
    await host.waitFor(ours('DBIRTH', '1', mark), 10_000, 'DBIRTH 1');
    const output = rig.daemon!.output();
    const line = output.split('\n').find((text) => text.includes(`[${reason}]`));
    assert.ok(line, `a log line naming ${reason}: ${output}`);
    assert.match(line, /WARN/);
    assert.ok(line.includes(`Sparkplug: ${firstServer.url}: `), line);
    assert.match(line, logged);
    assert.match(line, /trying the next server/);
    const failures = await rig.metric('iogate_sparkplug_connect_failures_total', `reason="${reason}"`);
    assert.ok(failures >= 1);
    assert.equal(await rig.metric('iogate_sparkplug_connected'), 1);
    assert.equal(await rig.metric('iogate_sparkplug_born'), 1);

    // The good server goes away: the node walks back through the failing one.
    await goodPath.cut();
    await untilTrue(async () => (await rig.metric('iogate_sparkplug_connect_failures_total', `reason="${reason}"`)) > failures, `another ${reason} during the outage`, 60_000);
    assert.equal(await rig.metric('iogate_sparkplug_connected'), 0);
    const from = Date.now();
    for (const bits of [1, 0, 1]) {
      await rig.sim.setRegisters(1, DI_REG, [bits]);
      await untilTrue(async () => (await seenDi(rig)) === bits, `DI 1_01 = ${bits} read by the daemon`);
    }
    assert.ok((await rig.metric('iogate_sparkplug_buffer_changes')) >= 3);

    const back = host.messages.length;
    await goodPath.restore();
    await host.waitFor(ours('NBIRTH', undefined, back), 60_000, 'NBIRTH after the outage');
    await untilTrue(async () => (await rig.metric('iogate_sparkplug_buffer_changes')) === 0, 'the buffer to drain');
    const alias = host.aliases(NODE, '1').get('di/1_01/value');
    const historical = () =>
      host
        .of(NODE, 'DDATA', '1')
        .filter((m) => m.index >= back)
        .flatMap((m) => m.metrics)
        .filter((metric) => metric.isHistorical && metric.alias === alias && metric.timestamp! >= from);
    await untilTrue(async () => historical().length >= 3, 'three historical changes of DI 1_01');
    assert.deepEqual(
      historical().map((metric) => metric.value),
      [true, false, true],
      'every change made during the outage, in order',
    );
    assert.equal(await rig.metric('iogate_sparkplug_buffer_dropped_total'), 0);
    assert.deepEqual(host.undecodable, []);
  } catch (error) {
    // What the node did, and when, to tell a slow machine from a stall.
    const node = rig.daemon!.output().split('\n').filter((text) => text.includes('Sparkplug'));
    (error as Error).message += `\n${Date.now()}: the daemon's Sparkplug lines:\n${node.slice(-30).join('\n')}`;
    throw error;
  } finally {
    await rig.stop();
    await goodPath.restore();
  }
}

test('a revoked client certificate on the first server: logged, counted, walked past; changes kept', async () => {
  await walksOnAndKeepsChanges({ url: url(first), ca: pki.caFile, ...revokedCert }, 'client_cert_revoked', /refused our client certificate: revoked/);
});

test("a CA that did not sign the first server's certificate: logged, counted, walked past; changes kept", async () => {
  const other = TestPki.create('spb-other');
  await walksOnAndKeepsChanges({ url: url(first), ca: other.caFile, ...nodeCert }, 'server_untrusted', /not signed by a trusted CA/);
});

test('an expired client certificate on the first server: logged, counted, walked past; changes kept', async () => {
  const expired = pki.issue(`${NODE}-expired`, 'client', { expired: true });
  await walksOnAndKeepsChanges({ url: url(first), ca: pki.caFile, ...expired }, 'client_cert_expired', /refused our client certificate: expired/);
});

test('a first server whose certificate names another host: logged, counted, walked past; changes kept', async () => {
  const misnamedCert = pki.issue('elsewhere', 'server', { altNames: 'DNS:elsewhere.example' });
  const misnamed = await Mosquitto.startWith((port) => tlsBrokerConfig(port, { pki, server: misnamedCert, acl: GOOD_ACL }));
  try {
    await walksOnAndKeepsChanges({ url: url(misnamed), ca: pki.caFile, ...nodeCert }, 'hostname_mismatch', /for another name/);
  } finally {
    await misnamed.stop();
  }
});

test("an ACL that denies the node's command topics (dynamic-security plugin: SUBACK 0x87): logged, counted, walked past; changes kept", async () => {
  // The node may publish in its group but subscribe to nothing: the plugin
  // refuses NCMD/DCMD in its SUBACK. (Mosquitto's acl_file grants a denied
  // SUBSCRIBE and delivers nothing instead: a node cannot see that; docs/sparkplug.md.)
  const deniedRole = 'edge-node-without-commands';
  const strict = await Mosquitto.startWith((port) =>
    tlsBrokerConfig(port, {
      pki,
      server: serverCert,
      dynamicSecurity: {
        clients: [{ username: NODE, roles: [{ rolename: deniedRole }] }],
        roles: [{ rolename: deniedRole, acls: [{ acltype: 'publishClientSend', topic: `spBv1.0/${GROUP}/#`, allow: true }] }],
        defaultACLAccess: { publishClientSend: false, publishClientReceive: true, subscribe: false, unsubscribe: true },
      },
    }),
  );
  try {
    await walksOnAndKeepsChanges({ url: url(strict), ca: pki.caFile, ...nodeCert }, 'subscribe_denied', /denied the subscription: not authorized \(ACL\).*Not authorized/);
  } finally {
    await strict.stop();
  }
});

test('a DCMD over the TLS session switches the coil at the simulator', async () => {
  const mark = host.messages.length;
  const rig = await SparkplugRig.start({ edgeNodeId: NODE, groupId: GROUP, servers: [goodServer()] });
  try {
    await host.waitFor(ours('DBIRTH', '1', mark), 60_000, 'DBIRTH 1');
    const alias = host.aliases(NODE, '1').get('do/1_01/value')!;
    assert.equal((await rig.sim.registers(1, DO_REG, 1))[0]! & 1, 0);
    await host.command(NODE, '1', [{ alias, type: 'Boolean', value: true }]);
    await untilTrue(async () => ((await rig.sim.registers(1, DO_REG, 1))[0]! & 1) === 1, 'DO 1_01 on at the simulator');
  } finally {
    await rig.stop();
  }
});
