import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXCEPTION } from '../../../src/modbus/pdu.js';
import { serveRequest, type SlaveStore } from '../../../src/modbus/slave.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const serve = (store: SlaveStore, pdu: string): string => serveRequest(store, hex(pdu)).toString('hex').toUpperCase();

/** 100 holding registers, 100 input registers, 100 coils, 100 discrete inputs, all starting at 0. */
class ArrayStore implements SlaveStore {
  holding = Array.from({ length: 100 }, (_, i) => i * 257);
  input = Array.from({ length: 100 }, (_, i) => 0xffff - i);
  coils = new Array<boolean>(100).fill(false);
  discrete = Array.from({ length: 100 }, (_, i) => i % 3 === 0);

  readRegisters(space: 'holding' | 'input', address: number, quantity: number): number[] | undefined {
    const regs = space === 'holding' ? this.holding : this.input;
    return address + quantity <= regs.length ? regs.slice(address, address + quantity) : undefined;
  }
  readBits(space: 'coil' | 'discrete', address: number, quantity: number): boolean[] | undefined {
    const bits = space === 'coil' ? this.coils : this.discrete;
    return address + quantity <= bits.length ? bits.slice(address, address + quantity) : undefined;
  }
  writeRegisters(address: number, values: number[]): boolean {
    if (address + values.length > this.holding.length) return false;
    this.holding.splice(address, values.length, ...values);
    return true;
  }
  writeCoils(address: number, values: boolean[]): boolean {
    if (address + values.length > this.coils.length) return false;
    this.coils.splice(address, values.length, ...values);
    return true;
  }
}

test('FC3 and FC4 read the right space', () => {
  const store = new ArrayStore();
  assert.equal(serve(store, '03 0002 0003'), '03 06 0202 0303 0404'.replace(/ /g, ''));
  assert.equal(serve(store, '04 0000 0002'), '0404FFFFFFFE');
});

test('FC1 and FC2 pack bits LSB first', () => {
  const store = new ArrayStore();
  store.coils[0] = true;
  store.coils[9] = true;
  assert.equal(serve(store, '01 0000 000A'), '01020102');
  // Discrete inputs 0,3,6,9 are on: 0100 1001 / 10 -> 49 02.
  assert.equal(serve(store, '02 0000 000A'), '02024902');
});

test('FC5 and FC15 write coils and echo', () => {
  const store = new ArrayStore();
  assert.equal(serve(store, '05 0007 FF00'), '050007FF00');
  assert.equal(store.coils[7], true);
  assert.equal(serve(store, '05 0007 0000'), '0500070000');
  assert.equal(store.coils[7], false);
  assert.equal(serve(store, '0F 0010 000A 02 CD01'), '0F0010000A');
  assert.deepEqual(store.coils.slice(16, 26), [true, false, true, true, false, false, true, true, true, false]);
});

test('FC6 and FC16 write holding registers and echo', () => {
  const store = new ArrayStore();
  assert.equal(serve(store, '06 0001 1234'), '0600011234');
  assert.equal(store.holding[1], 0x1234);
  assert.equal(serve(store, '10 0005 0002 04 000A 0102'), '1000050002');
  assert.deepEqual(store.holding.slice(5, 7), [10, 0x0102]);
});

test('addresses outside the store give ILLEGAL_DATA_ADDRESS', () => {
  const store = new ArrayStore();
  assert.equal(serve(store, '03 0063 0002'), '8302');
  assert.equal(serve(store, '04 0064 0001'), '8402');
  assert.equal(serve(store, '01 0060 0005'), '8102');
  assert.equal(serve(store, '02 0100 0001'), '8202');
  assert.equal(serve(store, '05 0064 FF00'), '8502');
  assert.equal(serve(store, '06 0064 0001'), '8602');
  assert.equal(serve(store, '0F 0063 0002 01 03'), '8F02');
  assert.equal(serve(store, '10 0063 0002 04 0001 0002'), '9002');
  assert.equal(serve(store, '03 FFFF 0002'), '8302', 'block past 65535');
  assert.equal(store.holding[99], 99 * 257, 'failed write left the store alone');
});

test('unknown functions give ILLEGAL_FUNCTION', () => {
  const store = new ArrayStore();
  assert.equal(serve(store, '07'), '8701');
  assert.equal(serve(store, '2B 0E 01 00'), 'AB01');
  assert.equal(serve(store, '17 0000 0001 0000 0001 02 0000'), '9701');
  assert.equal(serve(store, ''), '8001');
});

test('malformed requests give ILLEGAL_DATA_VALUE', () => {
  const store = new ArrayStore();
  assert.equal(serve(store, '03 0000 0000'), '8303');
  assert.equal(serve(store, '03 0000 007E'), '8303');
  assert.equal(serve(store, '03 0000'), '8303');
  assert.equal(serve(store, '05 0000 0001'), '8503');
  assert.equal(serve(store, '10 0000 0002 03 0001 00'), '9003');
  assert.equal(serve(store, '0F 0000 0009 01 FF'), '8F03');
});

test('a store that throws or misbehaves gives SLAVE_DEVICE_FAILURE instead of throwing', () => {
  const broken: SlaveStore = {
    readRegisters: () => {
      throw new Error('backing device gone');
    },
    readBits: () => [true],
    writeRegisters: () => true,
    writeCoils: () => true,
  };
  const failure = `0${EXCEPTION.SLAVE_DEVICE_FAILURE}`;
  assert.equal(serve(broken, '03 0000 0001'), `83${failure}`);
  assert.equal(serve(broken, '01 0000 0002'), `81${failure}`, 'wrong number of bits');

  const outOfRange: SlaveStore = { ...broken, readRegisters: () => [70000] };
  assert.equal(serve(outOfRange, '04 0000 0001'), `84${failure}`);
});
