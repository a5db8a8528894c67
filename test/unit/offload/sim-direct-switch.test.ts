import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { startSim, type SimProcess } from '../../helpers/sim-process.js';

// The simulator's DirectSwitch, driven as a master and a wire would drive a
// board: the masks are written over Modbus TCP, the input moves at the
// simulator's control endpoint, and the output is read back over Modbus.
// Brain section `00`: DI value register 0, DO value register 1 (coils 0…3),
// enable/polarity/toggle masks 1014/1015/1016, DI n drives DO n.

const ENABLE = 1014;
const POLARITY = 1015;
const TOGGLE = 1016;

class Master {
  private id = 0;
  private constructor(private readonly socket: Socket) {}
  static async open(port: number): Promise<Master> {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return new Master(socket);
  }
  private async call(pdu: number[]): Promise<Buffer> {
    const id = ++this.id & 0xffff;
    const header = [id >> 8, id & 0xff, 0, 0, 0, pdu.length + 1, 1];
    this.socket.write(Buffer.from([...header, ...pdu]));
    const [reply] = (await once(this.socket, 'data')) as [Buffer];
    assert.equal(reply[7]! & 0x80, 0, `exception reply ${reply.toString('hex')}`);
    return reply;
  }
  async read(address: number): Promise<number> {
    return (await this.call([3, address >> 8, address & 0xff, 0, 1])).readUInt16BE(9);
  }
  async write(address: number, value: number): Promise<void> {
    await this.call([6, address >> 8, address & 0xff, value >> 8, value & 0xff]);
  }
  async writeCoil(address: number, on: boolean): Promise<void> {
    await this.call([5, address >> 8, address & 0xff, on ? 0xff : 0, 0]);
  }
  close(): void {
    this.socket.destroy();
  }
}

async function rig(t: { after(fn: () => unknown): void }): Promise<{ sim: SimProcess; master: Master; input(bits: number): Promise<void>; output(): Promise<number> }> {
  const sim = await startSim(['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--model', '00', '--slave-id', '1', '--toggle-ms', '0']);
  t.after(() => sim.stop());
  const master = await Master.open(sim.tcpPort!);
  t.after(() => master.close());
  return { sim, master, input: (bits) => sim.setRegisters(1, 0, [bits]), output: () => master.read(1) };
}

test('without DirectSwitch an input moves no output', { timeout: 30_000 }, async (t) => {
  const { input, output } = await rig(t);
  await input(0b0001);
  assert.equal(await output(), 0);
});

test('Simple (follow): the paired output follows its input, and only that one', { timeout: 30_000 }, async (t) => {
  const { master, input, output } = await rig(t);
  await master.write(ENABLE, 0b0010);
  await input(0b0010);
  assert.equal(await output(), 0b0010);
  await input(0b0000);
  assert.equal(await output(), 0);
  // DI 1 is not in DirectSwitch: it moves nothing.
  await input(0b0001);
  assert.equal(await output(), 0);
});

test('Inverted: the output is the opposite of the input, from the moment the mode is on', { timeout: 30_000 }, async (t) => {
  const { master, input, output } = await rig(t);
  await master.write(POLARITY, 0b0001);
  await master.write(ENABLE, 0b0001);
  // Input off: the output is on at once.
  assert.equal(await output(), 0b0001);
  await input(0b0001);
  assert.equal(await output(), 0);
  await input(0b0000);
  assert.equal(await output(), 0b0001);
});

test('Toggle: each rising edge flips the output, falling edges do nothing', { timeout: 30_000 }, async (t) => {
  const { master, input, output } = await rig(t);
  await master.write(TOGGLE, 0b0100);
  await master.write(ENABLE, 0b0100);
  assert.equal(await output(), 0, 'switching Toggle on does not move the output');
  await input(0b0100);
  assert.equal(await output(), 0b0100);
  await input(0);
  assert.equal(await output(), 0b0100);
  await input(0b0100);
  assert.equal(await output(), 0);
});

test('a Modbus write to a DirectSwitch output still lands, until the next input edge', { timeout: 30_000 }, async (t) => {
  const { master, input, output } = await rig(t);
  await master.write(ENABLE, 0b0001);
  await master.writeCoil(0, true);
  assert.equal(await output(), 0b0001);
  await input(0b0001);
  await input(0);
  assert.equal(await output(), 0);
});

test('switching DirectSwitch off leaves the output where it is and the input no longer moves it', { timeout: 30_000 }, async (t) => {
  const { master, input, output } = await rig(t);
  await master.write(ENABLE, 0b0001);
  await input(0b0001);
  await master.write(ENABLE, 0);
  assert.equal(await output(), 0b0001);
  await input(0);
  assert.equal(await output(), 0b0001);
});
