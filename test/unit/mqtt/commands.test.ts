import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway, startGatewayOnBroker, type Gateway, type GatewayOnBroker } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// Commands sent by an independent client: the simulated board's output
// register must follow, and every command gets an answer on the ack topic.

let rig: GatewayOnBroker;
let broker: TestBroker;
let gateway: Gateway;
let client: Observer;

/** DO value register of the Neuron brain board: bit i is output 1_0(i+1). */
const DO_REGISTER = 1;

before(async () => {
  rig = await startGatewayOnBroker({}, ['plc/ack/#', 'plc/status']);
  ({ broker, gateway, observer: client } = rig);
});

after(async () => {
  await rig?.stop();
});

function outputBit(index: number): boolean {
  return (gateway.board.get('holding', DO_REGISTER) & (1 << index)) !== 0;
}

/** Publish a command and wait for its acknowledgement. */
async function command(path: string, payload: string, options: { retain?: boolean } = {}): Promise<any> {
  client.forget();
  await client.publish(`plc/cmd/${path}`, payload, { qos: 1, ...options });
  const message = await client.waitFor(`plc/ack/${path}`);
  assert.equal(message.retain, false, 'acknowledgements are not retained');
  return JSON.parse(message.text);
}

describe('JSON commands', () => {
  test('switch an output and answer with the confirmed state', async () => {
    const ack = await command('do/1_01', '{"value": 1}');
    assert.equal(ack.success, true);
    assert.equal(ack.result.circuit, '1_01');
    assert.equal(ack.result.value, 1);
    assert.equal(outputBit(0), true, 'the board register has the bit set');
    const off = await command('do/1_01', '{"value": false}');
    assert.equal(off.result.value, 0);
    assert.equal(outputBit(0), false);
  });

  test('accept alternate type names', async () => {
    const ack = await command('output/1_02', '{"value": "1"}');
    assert.equal(ack.success, true);
    assert.equal(outputBit(1), true);
    const input = await command('input/1_01', '{"debounce": 20}');
    assert.equal(input.success, true);
    assert.equal(input.result.debounce, 20);
  });

  test('accept an alias as circuit once it was set over MQTT', async () => {
    const named = await command('do/1_03', '{"alias": "pump"}');
    assert.equal(named.success, true);
    assert.equal(named.result.alias, 'pump');
    const ack = await command('do/pump', '{"value": 1}');
    assert.equal(ack.success, true);
    assert.equal(ack.result.circuit, '1_03');
    assert.equal(outputBit(2), true);
  });
});

describe('plain payloads for binary outputs', () => {
  // Numbers are judged as EVOK's int() and truthiness: 255 and 2 switch on, 0.5 off.
  const payloads = [['1', true], ['0', false], ['ON', true], ['off', false], ['true', true], ['FALSE', false], ['255', true], ['0.5', false], ['2', true], ['"0"', false]] as const;
  for (const [payload, expected] of payloads) {
    test(`'${payload}' switches the output ${expected ? 'on' : 'off'}`, async () => {
      const ack = await command('do/1_04', payload);
      assert.equal(ack.success, true, JSON.stringify(ack));
      assert.equal(ack.result.value, expected ? 1 : 0);
      assert.equal(outputBit(3), expected);
    });
  }
});

describe('refused commands are answered too', () => {
  test('unknown type', async () => {
    assert.deepEqual(await command('nosuch/1_01', '1'), { success: false, errors: { KeyError: "'nosuch'" } });
  });

  test('unknown circuit', async () => {
    const ack = await command('do/9_99', '1');
    assert.equal(ack.success, false);
    assert.match(ack.errors.Exception, /9_99/);
  });

  test('too few or too many topic levels', async () => {
    for (const path of ['do', 'do/1_01/value', 'do//1_01']) {
      const ack = await command(path, '1');
      assert.equal(ack.success, false);
      assert.match(ack.errors.InvalidTopic, /expected plc\/cmd\/<dev>\/<circuit>/);
    }
  });

  test('a command topic longer than the bound gets no answer, one at the bound does', async () => {
    // Echoing ever new long topics would make ever new packet sizes (see MAX_COMMAND_PATH).
    const atBound = `do/${'x'.repeat(253)}`;
    assert.equal(atBound.length, 256);
    const answered = await command(atBound, '1');
    assert.match(answered.errors.Exception, /xxxx/);
    client.forget();
    const tooLong = `do/${'y'.repeat(254)}`;
    await client.publish(`plc/cmd/${tooLong}`, '1', { qos: 1 });
    // Handled in order: once the next command's answer is here, the long one's would be too.
    await client.publish('plc/cmd/do/9_98', '1', { qos: 1 });
    const next = JSON.parse((await client.waitFor('plc/ack/do/9_98')).text);
    assert.match(next.errors.Exception, /9_98/, 'the client is still answered');
    assert.equal(client.received.filter((m) => m.topic === `plc/ack/${tooLong}`).length, 0);
  });

  test('payloads that are neither a JSON object nor a plain switch word', async () => {
    for (const payload of ['maybe', '[1]', 'null', '', '{"value": ']) {
      const ack = await command('do/1_01', payload);
      assert.equal(ack.success, false, payload);
      assert.ok(ack.errors.InvalidPayload, payload);
    }
  });

  test('plain words only for binary outputs', async () => {
    const ack = await command('di/1_01', '1');
    assert.equal(ack.success, false);
    assert.ok(ack.errors.InvalidPayload);
  });

  test('invalid fields and values, with nothing written', async () => {
    const before = gateway.board.get('holding', DO_REGISTER);
    const unknown = await command('do/1_01', '{"colour": "red"}');
    assert.equal(unknown.success, false);
    assert.ok(unknown.errors.ValidationError);
    const bad = await command('do/1_01', '{"value": "1.5"}');
    assert.equal(bad.success, false);
    assert.ok(bad.errors.ValueError);
    const word = await command('do/1_01', '"on"');
    assert.ok(word.errors.ValueError, 'a JSON string is a value, judged as int() would');
    const empty = await command('do/1_01', '{}');
    assert.equal(empty.success, false);
    assert.equal(gateway.board.get('holding', DO_REGISTER), before);
  });

  test('analog set points outside the advertised range, with nothing written', async () => {
    const before = [gateway.board.get('holding', 3000), gateway.board.get('holding', 3001)];
    for (const payload of ['{"value": 1e308}', '{"value": 10.5}', '{"value": "Infinity"}', '{"value": -1}']) {
      const ack = await command('ao/1_01', payload);
      assert.equal(ack.success, false, payload);
      assert.ok(ack.errors.ValidationError, payload);
    }
    assert.deepEqual([gateway.board.get('holding', 3000), gateway.board.get('holding', 3001)], before);
  });

  test('a retained command met on (re)subscribing is not carried out', async () => {
    // Brokers clear the retain flag when they forward live messages, so only
    // replays of stored commands are marked: a second gateway meets one at start.
    const observer = await Observer.connect(broker.url, ['plc2/ack/#']);
    await observer.publish('plc2/cmd/do/1_01', '1', { retain: true, qos: 1 });
    const second = await startGateway({ port: broker.port, clientId: 'plc2' });
    try {
      const ack = JSON.parse((await observer.waitFor('plc2/ack/do/1_01')).text);
      assert.equal(ack.success, false);
      assert.match(ack.errors.RetainedCommand, /retain/);
      assert.equal(second.board.get('holding', DO_REGISTER) & 1, 0, 'the output stayed off');
    } finally {
      await observer.publish('plc2/cmd/do/1_01', '', { retain: true, qos: 1 });
      await observer.close();
      await second.stop();
    }
  });
});

test('commands for one device run in the order sent; the last one wins', async () => {
  client.forget();
  const values = [1, 0, 1, 0, 1, 0, 1];
  for (const value of values) await client.publish('plc/cmd/do/1_02', String(value), { qos: 0 });
  const topic = 'plc/ack/do/1_02';
  const deadline = Date.now() + 5000;
  while (client.received.filter((message) => message.topic === topic).length < values.length && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const acks = client.received.filter((message) => message.topic === topic).map((message) => JSON.parse(message.text));
  assert.deepEqual(acks.map((ack) => ack.result.value), values);
  assert.equal(outputBit(1), true);
});

test('the gateway keeps serving after all of that', async () => {
  const ack = await command('relay/1_01', '1');
  assert.equal(ack.success, false, 'the Neuron brain board of this test has no relays');
  const state = await command('do/1_01', '1');
  assert.equal(state.success, true);
});
