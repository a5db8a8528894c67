import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EdgeNode } from '../../../src/api/sparkplug/edge-node.js';
import { until, type Gate } from '../../helpers/in-process.js';
import { startEdgeSession, type EdgeSession } from '../../helpers/sparkplug-gate.js';
import { writeDevice } from '../../../src/registry/write.js';
import { TahuHost, type HostMessage } from '../../helpers/sparkplug-host.js';

// The edge node's session against a real broker (aedes) and a host that reads
// with Eclipse Tahu's codec: births, data by exception, commands through the
// write path, refusals, rebirth, and NDEATH on a clean stop.

const NODE = 'node1';
let session: EdgeSession;
let host: TahuHost;
let gate: Gate;
let node: EdgeNode;

before(async () => {
  session = await startEdgeSession(NODE, { write: true });
  ({ host, gate, node } = session);
});

after(async () => {
  await session?.stop();
});

const isType = (type: string, device?: string) => (m: HostMessage) => m.edgeNode === NODE && m.type === type && (device === undefined || m.device === device);

test('NBIRTH at seq 0 with bdSeq and Node Control, then a DBIRTH per slave; QoS 0, not retained', async () => {
  const nbirth = await host.waitFor(isType('NBIRTH'));
  assert.equal(nbirth.topic, `spBv1.0/plant/NBIRTH/${NODE}`);
  assert.equal(nbirth.seq, 0);
  assert.equal(nbirth.qos, 0);
  assert.equal(nbirth.retain, false);
  const names = new Map(nbirth.metrics.map((m) => [m.name, m]));
  assert.equal(names.get('bdSeq')?.type, 'Int64');
  assert.equal(names.get('bdSeq')?.value, node.stats().bdSeq);
  assert.equal(names.get('Node Control/Rebirth')?.value, false);
  assert.equal(names.get('Node Control/Rebirth')?.alias, undefined);
  assert.equal(names.get('Node Control/Next Server')?.type, 'Boolean');
  assert.equal(typeof names.get('Properties/iogate Version')?.value, 'string');
  const dbirth = await host.waitFor(isType('DBIRTH', '1'));
  assert.equal(dbirth.seq, 1);
  assert.equal(dbirth.qos, 0);
  const metrics = new Map(dbirth.metrics.map((m) => [m.name, m]));
  assert.equal(metrics.get('di/1_01/value')?.type, 'Boolean');
  assert.equal(metrics.get('di/1_01/counter')?.type, 'UInt64');
  assert.equal(metrics.get('do/1_01/value')?.type, 'Boolean');
  assert.equal(metrics.get('ai/1_01/value')?.type, 'Double');
  assert.deepEqual(metrics.get('ai/1_01/value')?.properties, { engUnit: 'V' });
  assert.deepEqual(metrics.get('di/1_01/debounce')?.properties, { engUnit: 'ms' });
  assert.equal(metrics.get('di/1_01/value')?.properties, undefined);
  for (const metric of dbirth.metrics) assert.equal(typeof metric.alias, 'number', `${metric.name} has an alias`);
  assert.deepEqual(host.undecodable, []);
});

test('an input change is one DDATA by alias, with the next seq', async () => {
  const aliases = host.aliases(NODE, '1');
  const from = host.messages.length;
  gate.setInput(0, true);
  const data = await host.waitFor((m) => isType('DDATA', '1')(m) && m.index >= from && m.metrics.some((x) => x.alias === aliases.get('di/1_01/value')));
  const metric = data.metrics.find((x) => x.alias === aliases.get('di/1_01/value'))!;
  assert.equal(metric.value, true);
  assert.equal(metric.name, undefined);
  assert.equal(metric.isHistorical, undefined);
  assert.deepEqual(host.seqGaps(NODE), []);
});

test('a DCMD switches an output through the write path and shows as DDATA', async () => {
  const aliases = host.aliases(NODE, '1');
  const from = host.messages.length;
  await host.command(NODE, '1', [{ alias: aliases.get('do/1_01/value')!, type: 'Boolean', value: true }]);
  await host.waitFor((m) => isType('DDATA', '1')(m) && m.index >= from && m.metrics.some((x) => x.alias === aliases.get('do/1_01/value') && x.value === true));
  const device = gate.runtime.registry.find('do', '1_01')!;
  assert.equal(device.full()['value'], 1);
  assert.equal(node.stats().commands.accepted, 1);
});

test('refused commands change nothing: read-only, unknown alias, wrong datatype, out of range, garbage', async () => {
  const aliases = host.aliases(NODE, '1');
  const before = node.stats().commands;
  const output = gate.runtime.registry.find('do', '1_02')!;
  const input = gate.runtime.registry.find('di', '1_02')!;
  const ao = gate.runtime.registry.find('ao', '1_01')!;
  const aoBefore = ao.full()['value'];
  await host.command(NODE, '1', [{ alias: aliases.get('di/1_02/value')!, type: 'Boolean', value: true }]);
  await host.command(NODE, '1', [{ alias: 99999, type: 'Boolean', value: true }]);
  await host.command(NODE, '1', [{ name: 'do/1_02/value', type: 'String', value: 'on' }]);
  await host.command(NODE, '1', [{ name: 'ao/1_01/value', type: 'Double', value: 1e9 }]);
  await host.command(NODE, '1', [], { raw: Uint8Array.from([0x12, 0xff, 0xff, 0xff]) });
  await host.command(NODE, 'nosuch', [{ name: 'do/1_02/value', type: 'Boolean', value: true }]);
  await until(() => node.stats().commands.refused + node.stats().commands.malformed >= before.refused + before.malformed + 6, 'six refusals');
  assert.equal(node.stats().commands.accepted, before.accepted);
  assert.equal(output.full()['value'], 0);
  assert.equal(input.full()['value'], 0);
  assert.equal(ao.full()['value'], aoBefore);
});

test('Node Control/Rebirth: a new NBIRTH at seq 0 with the same bdSeq, and the DBIRTHs again', async () => {
  const from = host.messages.length;
  const bdSeq = node.stats().bdSeq;
  await host.rebirth(NODE);
  const nbirth = await host.waitFor((m) => isType('NBIRTH')(m) && m.index >= from);
  assert.equal(nbirth.seq, 0);
  assert.equal(nbirth.metrics.find((m) => m.name === 'bdSeq')?.value, bdSeq);
  const dbirth = await host.waitFor((m) => isType('DBIRTH', '1')(m) && m.index >= from);
  assert.equal(dbirth.seq, 1);
  assert.equal(node.stats().commands.rebirthRequests, 1);
  assert.deepEqual(host.seqGaps(NODE), []);
});

test('an analog mode change gives the device a new birth with the new unit', async () => {
  const from = host.messages.length;
  const ai = gate.runtime.registry.find('ai', '1_01')!;
  await writeDevice(gate.runtime.registry, gate.runtime.feed, ai, { mode: 'Current' });
  const death = await host.waitFor((m) => isType('DDEATH', '1')(m) && m.index >= from);
  const birth = await host.waitFor((m) => isType('DBIRTH', '1')(m) && m.index > death.index);
  assert.deepEqual(birth.metrics.find((m) => m.name === 'ai/1_01/value')?.properties, { engUnit: 'mA' });
  assert.deepEqual(host.seqGaps(NODE), []);
});

test('every metric of every NBIRTH, DBIRTH, NDATA and DDATA so far carries a timestamp, as the spec requires', () => {
  const carriers = host.messages.filter((m) => m.edgeNode === NODE && ['NBIRTH', 'DBIRTH', 'NDATA', 'DDATA'].includes(m.type));
  assert.ok(carriers.some((m) => m.type === 'NBIRTH') && carriers.some((m) => m.type === 'DBIRTH') && carriers.some((m) => m.type === 'DDATA'));
  const untimed = carriers.flatMap((m) => m.metrics.filter((x) => typeof x.timestamp !== 'number' || x.timestamp <= 0).map((x) => `${m.type} ${x.name ?? x.alias}`));
  assert.deepEqual(untimed, []);
});

test('a clean stop over MQTT 3.1.1 (aedes) publishes NDEATH itself, with the bdSeq of the birth, QoS 1, not retained', async () => {
  const bdSeq = node.stats().bdSeq;
  const birth = host.messages.filter(isType('NBIRTH')).at(-1)!;
  // So that an NDEATH made now is told apart from one made with the birth by its millisecond timestamp.
  while (Date.now() <= birth.timestamp!) await new Promise((resolve) => setTimeout(resolve, 1));
  await node.stop();
  const death = await host.waitFor(isType('NDEATH'));
  assert.equal(death.topic, `spBv1.0/plant/NDEATH/${NODE}`);
  assert.equal(death.metrics.find((m) => m.name === 'bdSeq')?.value, bdSeq);
  assert.equal(death.retain, false);
  assert.equal(death.seq, undefined);
  // 3.1.1 has no "disconnect with Will": this NDEATH was made at the stop, after the birth (the Will's is older).
  assert.ok(death.timestamp! > birth.timestamp!, `an NDEATH of its own (${death.timestamp} > ${birth.timestamp})`);
});
