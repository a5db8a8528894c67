import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Mosquitto } from '../helpers/mosquitto.js';
import { TahuHost, type HostMessage } from '../helpers/sparkplug-host.js';
import { tempDir } from '../helpers/temp-dir.js';
import { TestPki } from '../helpers/test-pki.js';
import { freePort } from './free-port.js';
import { SparkplugRig, untilTrue } from './peers/sparkplug-rig.js';

// The Sparkplug edge node against Mosquitto over TLS with client
// certificates. Its first server is given a revoked certificate: the broker
// refuses it, the node logs the cause, counts it and walks to the second
// server (the same broker with a good certificate), where it is born and
// takes a DCMD, judged at the simulator. The host listens on a plain
// loopback listener of the same broker.

const GROUP = 'plant';
const NODE = 'edge1';
const DO_REG = 1;

let broker: Mosquitto;
let host: TahuHost;
let rig: SparkplugRig;

before(async () => {
  const pki = TestPki.create('spb');
  const server = pki.issue('broker', 'server', { altNames: 'IP:127.0.0.1' });
  const good = pki.issue(NODE, 'client');
  const revoked = pki.issue(`${NODE}-revoked`, 'client');
  pki.revoke(revoked);
  const aclDir = tempDir('iogate-mosquitto-acl-');
  chmodSync(aclDir, 0o755);
  // Lines before the first `user` are for the anonymous host on the plain listener.
  writeFileSync(join(aclDir, 'acl'), `topic readwrite spBv1.0/#\n\nuser ${NODE}\ntopic readwrite spBv1.0/${GROUP}/#\ntopic read spBv1.0/STATE/#\n`);
  const plainPort = await freePort();
  broker = await Mosquitto.startWith((port) =>
    [
      'per_listener_settings false',
      'allow_anonymous true',
      'persistence false',
      `acl_file ${join(aclDir, 'acl')}`,
      `listener ${port} 127.0.0.1`,
      `cafile ${pki.caFile}`,
      `certfile ${server.cert}`,
      `keyfile ${server.key}`,
      'require_certificate true',
      'use_identity_as_username true',
      `crlfile ${pki.crlFile}`,
      `listener ${plainPort} 127.0.0.1`,
      '',
    ].join('\n'),
  );
  host = await TahuHost.connect(`mqtt://127.0.0.1:${plainPort}`, GROUP);
  const url = `mqtts://127.0.0.1:${broker.port}`;
  rig = await SparkplugRig.start({
    edgeNodeId: NODE,
    groupId: GROUP,
    servers: [
      { url, ca: pki.caFile, ...revoked },
      { url, ca: pki.caFile, ...good },
    ],
  });
});

after(async () => {
  await rig?.stop();
  await host?.close();
  await broker?.stop();
});

const ours = (type: string, device?: string) => (m: HostMessage) => m.edgeNode === NODE && m.type === type && (device === undefined || m.device === device);

test('a revoked certificate on the first server: logged, counted, and the node is born on the next', async () => {
  await host.waitFor(ours('NBIRTH'), 60_000, 'NBIRTH');
  await host.waitFor(ours('DBIRTH', '1'), 10_000, 'DBIRTH 1');
  const output = rig.daemon!.output();
  assert.match(output, /Sparkplug: mqtts:\/\/127\.0\.0\.1:\d+: the broker refused our client certificate: revoked \[client_cert_revoked\].*trying the next server/);
  assert.ok((await rig.metric('iogate_sparkplug_connect_failures_total', 'reason="client_cert_revoked"')) >= 1);
  assert.equal(await rig.metric('iogate_sparkplug_connected'), 1);
});

test('a DCMD over the TLS session switches the coil at the simulator', async () => {
  const alias = host.aliases(NODE, '1').get('do/1_01/value')!;
  assert.equal(((await rig.sim.registers(1, DO_REG, 1))[0]! & 1), 0);
  await host.command(NODE, '1', [{ alias, type: 'Boolean', value: true }]);
  await untilTrue(async () => ((await rig.sim.registers(1, DO_REG, 1))[0]! & 1) === 1, 'DO 1_01 on at the simulator');
});
