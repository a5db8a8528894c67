import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startSim } from '../../helpers/sim-process.js';

// The simulator's control endpoint tells when it set registers from outside
// and when a master first read one of them back (ns on the monotonic clock),
// so a benchmark can time a change from the register write.

async function readHolding(port: number, address: number, count: number): Promise<number[]> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const request = Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, address >> 8, address & 0xff, 0, count]);
  socket.write(request);
  const [reply] = (await once(socket, 'data')) as [Buffer];
  socket.destroy();
  return Array.from({ length: count }, (_, i) => reply.readUInt16BE(9 + 2 * i));
}

test('the control endpoint stamps a register write and the first read that covers it', { timeout: 30_000 }, async (t) => {
  const sim = await startSim(['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--model', '00', '--slave-id', '1']);
  t.after(() => sim.stop());
  const changes = async () => (await (await fetch(`${sim.controlUrl}/changes?unit=1`)).json()) as { at: string | null; readAt: string | null; writtenAt: string | null };
  assert.deepEqual(await changes(), { at: null, readAt: null, writtenAt: null });

  const response = await fetch(`${sim.controlUrl}/registers`, { method: 'POST', body: JSON.stringify({ unit: 1, space: 'holding', address: 1, values: [1] }) });
  const { ok, at } = (await response.json()) as { ok: boolean; at: string };
  assert.equal(ok, true);
  assert.deepEqual(await changes(), { at, readAt: null, writtenAt: null }, 'the control endpoint is no master: its write is not a master\'s');

  // A read of other registers does not count; the control endpoint's own reads are no master's.
  await readHolding(sim.tcpPort!, 6, 1);
  assert.deepEqual(await sim.registers(1, 1, 1), [1]);
  assert.equal((await changes()).readAt, null);

  assert.deepEqual(await readHolding(sim.tcpPort!, 0, 2), [0, 1]);
  const first = await changes();
  assert.equal(first.at, at);
  assert.ok(first.readAt !== null && BigInt(first.readAt) > BigInt(at), JSON.stringify(first));
  // Only the first read after the write is kept.
  await readHolding(sim.tcpPort!, 1, 1);
  assert.equal((await changes()).readAt, first.readAt);

  // A master's write (FC 6) is stamped as writtenAt: a benchmark times an output from it.
  const socket = connect(sim.tcpPort!, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(Buffer.from([0, 2, 0, 0, 0, 6, 1, 6, 0, 1, 0, 0]));
  await once(socket, 'data');
  socket.destroy();
  const written = (await changes()).writtenAt;
  assert.ok(written !== null && BigInt(written) > BigInt(first.readAt!), `writtenAt ${written}`);
});

test('a delayed write is answered at once and set later from the simulator\'s own timer', { timeout: 30_000 }, async (t) => {
  const sim = await startSim(['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--model', '00', '--slave-id', '1']);
  t.after(() => sim.stop());
  const post = (body: unknown) => fetch(`${sim.controlUrl}/registers`, { method: 'POST', body: JSON.stringify(body) });
  const changes = async () => (await (await fetch(`${sim.controlUrl}/changes?unit=1`)).json()) as { at: string | null; readAt: string | null; writtenAt: string | null };

  const asked = process.hrtime.bigint();
  const response = await post({ unit: 1, space: 'holding', address: 1, values: [7], delayMs: 300 });
  assert.deepEqual(await response.json(), { ok: true, at: null });
  // Not yet: the reply came before the write.
  if (process.hrtime.bigint() - asked < 250_000_000n) {
    assert.deepEqual(await sim.registers(1, 1, 1), [0]);
    assert.deepEqual(await changes(), { at: null, readAt: null, writtenAt: null });
  }
  let change = await changes();
  for (let tries = 0; change.at === null && tries < 500; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    change = await changes();
  }
  assert.ok(change.at !== null && BigInt(change.at) - asked >= 300_000_000n, JSON.stringify(change));
  assert.deepEqual(await sim.registers(1, 1, 1), [7]);
  assert.deepEqual(await readHolding(sim.tcpPort!, 1, 1), [7]);
  assert.ok((await changes()).readAt !== null);

  for (const delayMs of [-1, 1.5, 'soon', 60_001]) {
    const bad = await post({ unit: 1, space: 'holding', address: 1, values: [1], delayMs });
    assert.equal(bad.status, 400, String(delayMs));
    assert.match(((await bad.json()) as { error: string }).error, /delayMs/);
  }
  assert.deepEqual(await sim.registers(1, 1, 1), [7], 'a refused write sets nothing');
});
