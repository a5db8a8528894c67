import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TahuHost, type HostMessage } from '../helpers/sparkplug-host.js';
import { Mosquitto } from './peers/mosquitto.js';
import { SparkplugRig } from './peers/sparkplug-rig.js';

// iogate as a Sparkplug B edge node on Debian's mosquitto, checked by a host
// that decodes with Eclipse Tahu's codec (never ours). Outputs are read back
// through the simulator's own control endpoint, not through iogate.

const GROUP = 'plant';
const NODE = 'edge1';
/** do/1_01 is bit 0 of holding register 1 of the Neuron brain section (unit 1). */
const DO_REG = 1;

let brokers: Mosquitto[];
let host: TahuHost;
let rig: SparkplugRig;

before(async () => {
  brokers = [await Mosquitto.start(), await Mosquitto.start()];
  host = await TahuHost.connect(brokers[0]!.url, GROUP);
  rig = await SparkplugRig.start({ servers: brokers.map((broker) => broker.url), toggleMs: 0 });
});

after(async () => {
  await rig?.stop();
  await host?.close();
  for (const broker of brokers ?? []) await broker.kill('SIGTERM');
});

const ours = (type: string, device?: string, from = 0) => (m: HostMessage) => m.edgeNode === NODE && m.type === type && (device === undefined || m.device === device) && m.index >= from;
const bdSeqOf = (message: HostMessage) => message.metrics.find((metric) => metric.name === 'bdSeq')?.value;

async function doCoil(): Promise<number> {
  const [word] = await rig.sim.registers(1, DO_REG, 1);
  return word! & 1;
}

test('topics, QoS and retain of NBIRTH and DBIRTH; births for every slave', async () => {
  const nbirth = await host.waitFor(ours('NBIRTH'), 15_000, 'NBIRTH');
  assert.equal(nbirth.topic, `spBv1.0/${GROUP}/NBIRTH/${NODE}`);
  assert.equal(nbirth.seq, 0);
  assert.equal(nbirth.retain, false);
  assert.equal(nbirth.qos, 0);
  assert.equal(typeof bdSeqOf(nbirth), 'number');
  for (const device of ['1', '2']) {
    const dbirth = await host.waitFor(ours('DBIRTH', device), 10_000, `DBIRTH ${device}`);
    assert.equal(dbirth.topic, `spBv1.0/${GROUP}/DBIRTH/${NODE}/${device}`);
    assert.equal(dbirth.qos, 0);
    assert.equal(dbirth.retain, false);
    assert.ok(dbirth.metrics.every((metric) => typeof metric.name === 'string' && typeof metric.alias === 'number' && typeof metric.type === 'string'));
  }
  assert.deepEqual(host.undecodable, []);
  assert.deepEqual(host.seqGaps(NODE), []);
});

test('DCMD switches the simulator coil; the change comes back as DDATA', async () => {
  const alias = host.aliases(NODE, '1').get('do/1_01/value')!;
  const from = host.messages.length;
  assert.equal(await doCoil(), 0);
  await host.command(NODE, '1', [{ alias, type: 'Boolean', value: true }]);
  const data = await host.waitFor((m) => ours('DDATA', '1', from)(m) && m.metrics.some((x) => x.alias === alias && x.value === true), 10_000, 'DDATA do/1_01 true');
  assert.ok(data);
  assert.equal(await doCoil(), 1);
  await host.command(NODE, '1', [{ name: 'do/1_01/value', type: 'Boolean', value: false }]);
  await host.waitFor((m) => ours('DDATA', '1', from)(m) && m.metrics.some((x) => x.alias === alias && x.value === false), 10_000, 'DDATA do/1_01 false');
  assert.equal(await doCoil(), 0);
});

test('refused commands and hostile payloads change nothing; the node stays up and keeps publishing', async () => {
  const aliases = host.aliases(NODE, '1');
  const accepted = await rig.metric('iogate_sparkplug_commands_total', 'result="accepted"');
  const [before] = await rig.sim.registers(1, DO_REG, 1);
  // Read-only, unknown alias, wrong datatype, wrong device, out of range.
  await host.command(NODE, '1', [{ alias: aliases.get('di/1_01/value')!, type: 'Boolean', value: true }]);
  await host.command(NODE, '1', [{ alias: 65_000, type: 'Boolean', value: true }]);
  await host.command(NODE, '1', [{ name: 'do/1_02/value', type: 'Int32', value: 1 }]);
  await host.command(NODE, '2', [{ name: 'do/1_02/value', type: 'Boolean', value: true }]);
  await host.command(NODE, '1', [{ name: 'do/1_02/pwm_duty', type: 'Double', value: 1e6 }]);
  // Malformed protobuf: truncated varints, wrong wire types, huge lengths, deep nesting, random bytes.
  const hostile: number[][] = [
    [0x08, 0xff, 0xff],
    [0x12, 0xff, 0xff, 0xff, 0xff, 0x0f],
    [0x09, 1, 2, 3],
    [0x12, 0x06, 0x4a, 0x04, 0x4a, 0x02, 0x4a, 0x00],
    [0x12, 0x04, 0x20, 0x0b, 0x50, 0x01],
  ];
  let seed = 7;
  for (let i = 0; i < 200; i++) {
    const bytes: number[] = [];
    for (let j = 0; j < 1 + (i % 40); j++) bytes.push((seed = (seed * 1103515245 + 12345) % 2 ** 31) & 0xff);
    hostile.push(bytes);
  }
  for (const bytes of hostile) {
    await host.command(NODE, '1', [], { raw: Uint8Array.from(bytes) });
    await host.command(NODE, undefined, [], { raw: Uint8Array.from(bytes) });
  }
  await host.command(NODE, '1', [], { raw: new Uint8Array(200_000) });
  // Still alive and publishing: a rebirth request is answered.
  const from = host.messages.length;
  await host.rebirth(NODE);
  await host.waitFor(ours('NBIRTH', undefined, from), 10_000, 'NBIRTH after the hostile traffic');
  assert.equal(rig.daemon!.child.exitCode, null);
  const [after] = await rig.sim.registers(1, DO_REG, 1);
  assert.equal(after, before);
  assert.equal(await rig.metric('iogate_sparkplug_commands_total', 'result="accepted"'), accepted);
  assert.ok((await rig.metric('iogate_sparkplug_commands_total', 'result="malformed"')) > 0);
});

test('rebirth on command: NBIRTH at seq 0 with the same bdSeq, then every DBIRTH, on the same connection', async () => {
  const connects = await rig.metric('iogate_sparkplug_connects_total');
  const previous = host.of(NODE, 'NBIRTH').at(-1)!;
  const from = host.messages.length;
  await host.rebirth(NODE);
  const nbirth = await host.waitFor(ours('NBIRTH', undefined, from), 10_000, 'NBIRTH');
  assert.equal(nbirth.seq, 0);
  assert.equal(bdSeqOf(nbirth), bdSeqOf(previous));
  await host.waitFor(ours('DBIRTH', '1', from), 10_000, 'DBIRTH 1');
  await host.waitFor(ours('DBIRTH', '2', from), 10_000, 'DBIRTH 2');
  assert.equal(await rig.metric('iogate_sparkplug_connects_total'), connects);
  assert.ok((await rig.metric('iogate_sparkplug_rebirth_requests_total')) >= 1);
});

test('a slave the simulator silences gets DDEATH, and a fresh DBIRTH when it answers again', async () => {
  const from = host.messages.length;
  await rig.sim.silence(2, true);
  const death = await host.waitFor(ours('DDEATH', '2', from), 15_000, 'DDEATH 2');
  assert.equal(death.topic, `spBv1.0/${GROUP}/DDEATH/${NODE}/2`);
  assert.equal(typeof death.seq, 'number');
  await rig.sim.silence(2, false);
  const birth = await host.waitFor(ours('DBIRTH', '2', from), 20_000, 'DBIRTH 2 again');
  assert.ok(birth.index > death.index);
  assert.deepEqual(host.seqGaps(NODE, from), []);
});

test('bdSeq pairs NDEATH with NBIRTH across SIGKILL (the Will) and SIGTERM (over MQTT 5 the Will again, asked for by the DISCONNECT) restarts', async () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    const birth = host.of(NODE, 'NBIRTH').at(-1)!;
    const from = host.messages.length;
    await rig.restartDaemon(signal);
    const death = await host.waitFor(ours('NDEATH', undefined, from), 15_000, `NDEATH after ${signal}`);
    assert.equal(bdSeqOf(death), bdSeqOf(birth), `${signal}: NDEATH carries the bdSeq of the birth it ends`);
    assert.equal(death.qos, 1, `${signal}: NDEATH at QoS 1`);
    assert.equal(death.retain, false);
    // The Will's payload was made when the node connected, before its NBIRTH: a clean stop over MQTT 5
    // publishes no NDEATH of its own but ends with DISCONNECT 0x04, and the broker delivers the Will.
    assert.ok(death.timestamp! <= birth.timestamp!, `${signal}: the NDEATH is the Will the broker published (timestamp ${death.timestamp} <= NBIRTH's ${birth.timestamp})`);
    const next = await host.waitFor(ours('NBIRTH', undefined, from), 15_000, `NBIRTH after ${signal}`);
    assert.equal(bdSeqOf(next), ((bdSeqOf(birth) as number) + 1) % 256, `${signal}: the restarted node takes the next bdSeq`);
    assert.ok(next.index > death.index);
    assert.equal(host.messages.filter(ours('NDEATH', undefined, from)).length, 1, `${signal}: one NDEATH`);
  }
});

test('every metric of every NBIRTH, DBIRTH, NDATA and DDATA a subscriber saw carries a timestamp', () => {
  const carriers = host.messages.filter((m) => m.edgeNode === NODE && ['NBIRTH', 'DBIRTH', 'NDATA', 'DDATA'].includes(m.type));
  for (const type of ['NBIRTH', 'DBIRTH', 'DDATA']) assert.ok(carriers.some((m) => m.type === type), `some ${type} seen`);
  const untimed = carriers.flatMap((m) => m.metrics.filter((x) => typeof x.timestamp !== 'number' || x.timestamp <= 0).map((x) => `${m.type} ${x.name ?? x.alias}`));
  assert.deepEqual(untimed, []);
});

test('walks to the second broker when the first is killed, and births there', async () => {
  const second = await TahuHost.connect(brokers[1]!.url, GROUP);
  try {
    await brokers[0]!.kill('SIGKILL');
    const nbirth = await second.waitFor((m) => m.edgeNode === NODE && m.type === 'NBIRTH', 20_000, 'NBIRTH on the second broker');
    assert.equal(nbirth.seq, 0);
    await second.waitFor((m) => m.edgeNode === NODE && m.type === 'DBIRTH' && m.device === '1', 10_000, 'DBIRTH on the second broker');
    assert.equal(await rig.metric('iogate_sparkplug_connected', `server="${brokers[1]!.url}"`), 1);
    // Node Control/Next Server: NDEATH here, then on to the first broker (back again).
    await brokers[0]!.run();
    const back = await TahuHost.connect(brokers[0]!.url, GROUP);
    try {
      await second.command(NODE, undefined, [{ name: 'Node Control/Next Server', type: 'Boolean', value: true }]);
      const death = await second.waitFor((m) => m.edgeNode === NODE && m.type === 'NDEATH', 10_000, 'NDEATH on leaving the second broker');
      assert.equal(bdSeqOf(death), bdSeqOf(nbirth));
      await back.waitFor((m) => m.edgeNode === NODE && m.type === 'NBIRTH', 20_000, 'NBIRTH back on the first broker');
    } finally {
      await back.close();
    }
  } finally {
    await second.close();
    await brokers[0]!.run();
  }
});
