import assert from 'node:assert/strict';
import { test } from 'node:test';
import sparkplugClient from 'sparkplug-client';
import { TahuHost, type HostMessage } from '../helpers/sparkplug-host.js';
import { Mosquitto } from './peers/mosquitto.js';
import { SparkplugRig, untilTrue as until } from './peers/sparkplug-rig.js';

// STATE gating with a primary host, seq continuity under load, and a second
// edge node (Eclipse Tahu's own sparkplug-client) read by the same host code.

const GROUP = 'plant';
const bdSeqOf = (message: HostMessage) => message.metrics.find((metric) => metric.name === 'bdSeq')?.value;

test('STATE gating: no NBIRTH (and no command obeyed) before the primary host is online; older STATE ignored; offline STATE ends the session', async () => {
  const broker = await Mosquitto.start();
  // The host's subscription is up, its STATE not yet published.
  const host = await TahuHost.connect(broker.url, GROUP);
  const rig = await SparkplugRig.start({ servers: [broker.url], primaryHostId: 'scada' });
  const scada = await TahuHost.connect(broker.url, 'unused', { hostId: 'scada', online: false });
  const node = rig.edgeNodeId;
  const ours = (type: string, from = 0) => (m: HostMessage) => m.edgeNode === node && m.type === type && m.index >= from;
  try {
    await until(async () => (await rig.metric('iogate_sparkplug_waiting_for_host')) === 1, 'the node to wait for the host');
    assert.equal(host.of(node, 'NBIRTH').length, 0, 'no NBIRTH while the host is offline');
    // A command before the birth is refused and writes nothing (do/1_01: bit 0 of register 1 of unit 1).
    await host.command(node, '1', [{ name: 'do/1_01/value', type: 'Boolean', value: true }]);
    await until(async () => (await rig.metric('iogate_sparkplug_commands_total', 'result="refused"')) === 1, 'the command to be refused');
    assert.equal((await rig.sim.registers(1, 1, 1))[0]! & 1, 0);

    const online = Date.now();
    await scada.publishState(true, online);
    const first = await host.waitFor(ours('NBIRTH'), 10_000, 'NBIRTH once the host is online');
    assert.equal(first.seq, 0);

    // An offline STATE older than the last one seen is ignored: the node stays born and answers a rebirth.
    let from = host.messages.length;
    await scada.publishState(false, online - 60_000);
    await host.rebirth(node);
    await host.waitFor(ours('NBIRTH', from), 10_000, 'NBIRTH of the rebirth');
    assert.equal(host.of(node, 'NDEATH').filter((m) => m.index >= from).length, 0, 'no NDEATH for a stale STATE');

    // A current offline STATE: NDEATH with the birth's bdSeq, and no new birth until online again.
    from = host.messages.length;
    await scada.publishState(false, Date.now());
    const death = await host.waitFor(ours('NDEATH', from), 10_000, 'NDEATH on the host going offline');
    assert.equal(bdSeqOf(death), bdSeqOf(first));
    await until(async () => (await rig.metric('iogate_sparkplug_waiting_for_host')) === 1, 'the node to wait again');
    assert.equal(host.of(node, 'NBIRTH').filter((m) => m.index >= from).length, 0);
    await scada.publishState(true, Date.now());
    const again = await host.waitFor(ours('NBIRTH', from), 10_000, 'NBIRTH once the host is back');
    assert.equal(bdSeqOf(again), ((bdSeqOf(first) as number) + 1) % 256);
  } finally {
    await rig.stop();
    await scada.close();
    await host.close();
    await broker.kill('SIGTERM');
  }
});

test('seq runs 0..255 and wraps without a gap over 10,000 changes; Tahu\'s own edge node is read by the same host', async () => {
  const broker = await Mosquitto.start();
  const host = await TahuHost.connect(broker.url, GROUP);
  const rig = await SparkplugRig.start({ servers: [broker.url], toggleMs: 20 });
  const tahuNode = sparkplugClient.newClient({
    serverUrl: broker.url,
    username: '',
    password: '',
    groupId: GROUP,
    edgeNode: 'tahu1',
    clientId: `tahu-${process.pid}`,
    version: 'spBv1.0',
  });
  tahuNode.on('error', () => undefined);
  tahuNode.on('birth', () => {
    tahuNode.publishNodeBirth({ timestamp: Date.now(), metrics: [{ name: 'Node Metric', type: 'Int32', value: 3 }] });
    tahuNode.publishDeviceBirth('dev1', { timestamp: Date.now(), metrics: [{ name: 'Temperature', type: 'Double', value: 21.5 }] });
    tahuNode.publishDeviceData('dev1', { timestamp: Date.now(), metrics: [{ name: 'Temperature', type: 'Double', value: 22 }] });
  });
  const node = rig.edgeNodeId;
  try {
    const changes = (m: HostMessage) => m.edgeNode === node && m.type === 'DDATA';
    await host.waitFor((m) => m.edgeNode === node && m.type === 'NBIRTH', 15_000, 'NBIRTH');
    await until(async () => host.messages.filter(changes).reduce((sum, m) => sum + m.metrics.length, 0) >= 10_000, '10,000 changes', 120_000);
    const data = host.messages.filter(changes);
    assert.ok(data.length > 256, `seq wrapped (${data.length} DDATA messages)`);
    assert.deepEqual(host.seqGaps(node), []);
    assert.ok(data.some((m) => m.seq === 255) && data.some((m) => m.seq === 0));

    // Tahu's client, read by the same code: bdSeq in NBIRTH, seq from 0, device birth and data.
    const tahuBirth = await host.waitFor((m) => m.edgeNode === 'tahu1' && m.type === 'NBIRTH', 10_000, "Tahu's NBIRTH");
    assert.equal(tahuBirth.seq, 0);
    assert.equal(typeof bdSeqOf(tahuBirth), 'number');
    const tahuDevice = await host.waitFor((m) => m.edgeNode === 'tahu1' && m.type === 'DBIRTH' && m.device === 'dev1', 10_000, "Tahu's DBIRTH");
    assert.equal(tahuDevice.metrics[0]!.name, 'Temperature');
    await host.waitFor((m) => m.edgeNode === 'tahu1' && m.type === 'DDATA', 10_000, "Tahu's DDATA");
    assert.deepEqual(host.seqGaps('tahu1'), []);
    const ourBirth = host.of(node, 'NBIRTH')[0]!;
    // Both births carry the same node-level shape the host relies on.
    for (const birth of [ourBirth, tahuBirth]) assert.ok(birth.metrics.some((m) => m.name === 'bdSeq'));
    assert.deepEqual(host.undecodable, []);
  } finally {
    tahuNode.stop();
    await rig.stop();
    await host.close();
    await broker.kill('SIGTERM');
  }
});
