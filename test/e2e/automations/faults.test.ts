import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startSimBehindProxy, type FaultyProxy, type ProxiedSim } from '../../helpers/faulty-proxy.js';
import { staysOffAtSimulator, type SimProcess } from '../../helpers/sim-process.js';
import { spawnDaemon, untilShowingLog, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// Automations' timers against a real daemon process and a board simulated in
// another process (it keeps its outputs while iogate dies, as a board does):
// SIGKILL mid-staircase and mid-sequence, then a restart; the board silenced
// mid-timer. Nothing switches on by itself, and the log says why.
// Outputs are read at the simulator; inputs are set there.

const DO = { stair: 0, sequence: 1 };
let rig: ProxiedSim;
let sim: SimProcess;
let proxy: FaultyProxy;
let configPath: string;
let daemon: SpawnedDaemon | undefined;

before(async () => {
  rig = await startSimBehindProxy(
    [{ unit: 1, model: '00' }],
    `automations:
  stair:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, on_for_s: 600}
  sequence:
    when: {input: di/1_02, edge: rising}
    then:
      - {output: do/1_02, set: on}
      - {delay_s: 600}
      - {output: do/1_02, set: off}
`,
    'iogate-automation-faults-',
  );
  ({ sim, proxy, configPath } = rig);
});

after(async () => {
  await daemon?.stop('SIGKILL');
  await rig?.stop();
});

async function output(bit: number): Promise<boolean> {
  const [word] = await sim.registers(1, 1, 1);
  return ((word! >> bit) & 1) === 1;
}

async function setInputs(bits: number): Promise<void> {
  await sim.setRegisters(1, 0, [bits]);
}

const until = (check: () => Promise<boolean>, what: string, limitMs?: number) => untilShowingLog(daemon, check, what, limitMs);
const staysOff = (ms: number) => staysOffAtSimulator(async () => [await output(DO.stair), await output(DO.sequence)], ms);

describe('restart after SIGKILL', () => {
  test('mid-staircase and mid-sequence: both outputs go to their safe state (off) at start-up, the log says why, nothing resumes', async () => {
    daemon = await spawnDaemon(['--config', configPath]);
    await setInputs(0b11);
    await until(async () => (await output(DO.stair)) && (await output(DO.sequence)), 'both on');
    await daemon.stop('SIGKILL');
    assert.equal(await output(DO.stair), true, 'the board keeps its outputs while iogate is gone');
    // The inputs stay on: at the restart that is a level, not a rise.
    daemon = await spawnDaemon(['--config', configPath]);
    await until(async () => !(await output(DO.stair)) && !(await output(DO.sequence)), 'both off');
    assert.match(daemon.output(), /pulse on do\/1_01 was running when iogate stopped \(\d+ s still to run\): switched off \(fail safe\)/);
    assert.match(daemon.output(), /automation:sequence: a timed sequence was running when iogate stopped; do\/1_02 is put in its safe state \(off\), it is not resumed/);
    await staysOff(800);
    await setInputs(0);
  });
});

describe('board silenced mid-timer', () => {
  test('the staircase still ends: its off is retried until the board is back; nothing is replayed', async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const short = configPath.replace('config.yaml', 'short.yaml');
    const { readFileSync } = await import('node:fs');
    writeFileSync(short, readFileSync(configPath, 'utf8').replace('on_for_s: 600', 'on_for_s: 0.5'));
    await daemon!.stop('SIGTERM');
    daemon = await spawnDaemon(['--config', short]);
    await setInputs(0b01);
    await until(async () => output(DO.stair), 'the staircase on');
    proxy.silent.add(1);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.equal(await output(DO.stair), true, 'the board cannot be reached: it keeps the output');
    proxy.silent.delete(1);
    await until(async () => !(await output(DO.stair)), 'the off to land once the board is back');
    assert.match(daemon.output(), /do 1_01: switching it off failed .*trying again every 1 s/);
    await staysOff(800);
    await setInputs(0);
  });
});

describe('reload through the service', () => {
  test('an unknown reference refuses the reload as a whole; a valid change restarts only that automation', async () => {
    const { readFileSync } = await import('node:fs');
    const file = configPath.replace('config.yaml', 'short.yaml');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace('output: do/1_01, on_for_s: 0.5', 'output: do/1_09, on_for_s: 0.5'));
    const refused = await fetch(`${daemon!.baseUrl}/config/reload`, { method: 'POST' });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /automations\.stair\.then\.output: 'do\/1_09': no do 1_09 on the configured boards/);
    writeFileSync(file, text.replace('on_for_s: 0.5', 'on_for_s: 0.7'));
    const applied = await fetch(`${daemon!.baseUrl}/config/reload`, { method: 'POST' });
    assert.equal(applied.status, 200, await applied.text());
    await until(async () => /automations: stair restarted; 1 kept with their timers/.test(daemon!.output()), 'the reload line');
    const state = (await (await fetch(`${daemon!.baseUrl}/rest/automation/stair`)).json()) as Record<string, unknown>;
    assert.match(String(state['description']), /on for 0\.7 s/);
  });
});

describe('restart with the board offline', () => {
  test('mid-sequence: the safe-state off is retried until the board is back, then lands; nothing else switches', async () => {
    await setInputs(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await setInputs(0b10);
    await until(async () => output(DO.sequence), 'the sequence on');
    await daemon!.stop('SIGKILL');
    proxy.silent.add(1);
    daemon = await spawnDaemon(['--config', configPath.replace('config.yaml', 'short.yaml')]);
    await until(async () => /do 1_02: switching it off failed .*trying again every 1 s until it lands \(automation:sequence: a timed sequence was running when iogate stopped/.test(daemon!.output()), 'the first failed attempt');
    assert.equal(await output(DO.sequence), true, 'the board is away: its output is as it was');
    proxy.silent.delete(1);
    await until(async () => !(await output(DO.sequence)), 'the off to land once the board is back');
    await staysOff(800);
    await setInputs(0);
  });
});
