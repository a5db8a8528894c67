import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startSimBehindProxy, type FaultyProxy, type ProxiedSim } from '../../helpers/faulty-proxy.js';
import { relayAtSimulator } from '../../helpers/brain-relay-sim.js';
import { staysOffAtSimulator, type SimProcess } from '../../helpers/sim-process.js';
import { spawnDaemon, untilShowingLog, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// The fail-safe rules with a real daemon process and a board simulated in
// another process (it keeps its relays while iogate dies, as a board does):
// SIGKILL mid-pulse and mid-movement, then a restart; a board silenced
// mid-movement, then back. Relays are read at the simulator.

const RELAY = { up: 0, down: 1, pulsed: 4 };

let rig: ProxiedSim;
let sim: SimProcess;
let proxy: FaultyProxy;
let configPath: string;
let daemon: SpawnedDaemon | undefined;

before(async () => {
  rig = await startSimBehindProxy(
    [
      { unit: 2, model: '01' },
      { unit: 1, model: '00' },
    ],
    `interlocks:
  - outputs: [ro/2_06, do/1_01]
    dwell_ms: 100
covers:
  blind:
    up: ro/2_01
    down: ro/2_02
    travel_up_s: 20
    travel_down_s: 20
`,
    'iogate-outputs-faults-',
  );
  ({ sim, proxy, configPath } = rig);
});

after(async () => {
  await daemon?.stop('SIGKILL');
  await rig?.stop();
});

const relay = (bit: number) => relayAtSimulator(sim, bit);

const until = (check: () => Promise<boolean>, what: string, limitMs?: number) => untilShowingLog(daemon, check, what, limitMs);

async function post(path: string, body: string): Promise<number> {
  const response = await fetch(`${daemon!.baseUrl}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body });
  await response.arrayBuffer();
  return response.status;
}

async function cover(): Promise<Record<string, unknown>> {
  return (await (await fetch(`${daemon!.baseUrl}/rest/cover/blind`)).json()) as Record<string, unknown>;
}

/** Relays stay off for `ms`, sampled at the simulator. */
const staysOff = (ms: number) => staysOffAtSimulator(async () => [await relay(RELAY.up), await relay(RELAY.down), await relay(RELAY.pulsed)], ms);

describe('restart after SIGKILL', () => {
  test('mid-pulse: the output is switched off at start-up and the log says why', async () => {
    daemon = await spawnDaemon(['--config', configPath]);
    assert.equal(await post('/rest/ro/2_05', 'value=1&pulse_ms=600000'), 200);
    assert.equal(await relay(RELAY.pulsed), true);
    await daemon.stop('SIGKILL');
    assert.equal(await relay(RELAY.pulsed), true, 'the board keeps its relay while iogate is gone');
    daemon = await spawnDaemon(['--config', configPath]);
    await until(async () => !(await relay(RELAY.pulsed)), 'the pulsed relay to go off');
    assert.match(daemon.output(), /pulse on ro\/2_05 was running when iogate stopped \(\d+ s still to run\): switched off \(fail safe\)/);
  });

  test('mid-movement: the motor is switched off, the position is unknown, nothing moves by itself', async () => {
    assert.equal(await post('/rest/cover/blind', 'command=open'), 200);
    assert.equal(await relay(RELAY.up), true);
    await daemon!.stop('SIGKILL');
    daemon = await spawnDaemon(['--config', configPath]);
    await until(async () => !(await relay(RELAY.up)), 'the motor to stop');
    assert.match(daemon.output(), /cover blind was moving when iogate stopped \(killed or crashed\)/);
    const state = await cover();
    assert.deepEqual([state['position'], state['calibrated'], state['moving']], [null, false, 'stopped']);
    await staysOff(1000);
  });
});

describe('board silenced mid-movement', () => {
  test('the cover reports unknown; when the board is back its motor is switched off and nothing is replayed', async () => {
    assert.equal(await post('/rest/cover/blind', 'command=close'), 200);
    assert.equal(await relay(RELAY.down), true);
    proxy.silent.add(2);
    await until(async () => (await cover())['moving'] === 'unknown', 'the cover to report unknown');
    const lost = await cover();
    assert.deepEqual([lost['position'], lost['calibrated']], [null, false]);
    assert.match(daemon!.output(), /cover blind: its board went offline mid-movement; position unknown until a full run, the command is dropped/);
    assert.equal(await post('/rest/cover/blind', 'command=open'), 503, 'a command while the board is away fails, and is not kept for later');
    proxy.silent.delete(2);
    await until(async () => (await cover())['moving'] === 'stopped', 'the board to be back');
    await until(async () => !(await relay(RELAY.down)), 'the fail-safe off to land');
    await staysOff(1500);
    const back = await cover();
    assert.deepEqual([back['position'], back['moving']], [null, 'stopped']);
  });
});

describe('interlock across two boards, one silenced', () => {
  test('a member on a silent board has an unknown state: switching another on is refused; back with two on, all go off', async () => {
    proxy.silent.add(2);
    await until(async () => (await cover())['moving'] === 'unknown', 'board 2 to be offline');
    const refused = await fetch(`${daemon!.baseUrl}/rest/do/1_01`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'value=1' });
    assert.equal(refused.status, 409);
    assert.match(await refused.text(), /the state of ro 2_06, interlocked with it \(interlocks\[0\]\), is unknown/);
    // Another master switches both on meanwhile (ro 2_06: bit 5 of register 1 at unit 2; do 1_01: bit 0 of register 1 at unit 1).
    await sim.setRegisters(2, 1, [0b100000]);
    await sim.setRegisters(1, 1, [0b1]);
    proxy.silent.delete(2);
    const bits = async () => [((await sim.registers(2, 1, 1))[0]! >> 5) & 1, (await sim.registers(1, 1, 1))[0]! & 1];
    await until(async () => (await bits()).every((bit) => bit === 0), 'both switched off');
    assert.match(daemon!.output(), /interlocks\[0\]: ro 2_06 and do 1_01 found on together now; all switched off/);
  });
});
