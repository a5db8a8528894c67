import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { configFile } from '../helpers/http-call.js';
import { startSim } from '../helpers/sim-process.js';
import { spawnDaemon } from '../helpers/spawn-daemon.js';

// Prometheus' own checker (`promtool check metrics`, Debian's prometheus
// package) reads iogate's /metrics: a board answering, a board that does not
// (offline, values ageing), 1-Wire sensors and counter totals, so every
// family has samples.

const PROMTOOL = '/usr/bin/promtool';

async function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stdin.on('error', () => {});
  child.stdin.end(text);
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

test('promtool check metrics accepts /metrics, with the per-slave ages, qualities and counter totals in it', async (t) => {
  const sim = await startSim(['--model', '00', '--slave-id', '1', '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0']);
  t.after(() => sim.stop());
  // A second board behind its own simulator, stopped once it was read: its slave goes offline.
  const gone = await startSim(['--model', 'xS11', '--slave-id', '7', '--tcp', '127.0.0.1:0']);
  t.after(() => gone.stop());
  const { dir, file } = configFile(
    [
      'comm_channels:',
      '  BUS:',
      '    type: MODBUSTCP',
      '    hostname: 127.0.0.1',
      `    port: ${sim.tcpPort}`,
      '    timeout: 100',
      '    devices:',
      '      1:',
      "        model: '00'",
      '        slave-id: 1',
      '  GONE:',
      '    type: MODBUSTCP',
      '    hostname: 127.0.0.1',
      `    port: ${gone.tcpPort}`,
      '    timeout: 100',
      '    devices:',
      '      2:',
      "        model: 'xS11'",
      '        slave-id: 7',
      '  OWBUS:',
      '    type: OWFS',
      '    interval: 1',
      '    simulate: [28, 26]',
    ].join('\n'),
    'iogate-promtool-',
  );
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  t.after(() => daemon.stop());
  const metrics = async () => (await fetch(`${daemon.baseUrl}/metrics`)).text();
  while (!/iogate_slave_quality\{[^}]*slave="2",[^}]*quality="good"\} 1/.test(await metrics())) await new Promise((resolve) => setTimeout(resolve, 50));
  await gone.stop();
  let text = '';
  // Until the counter total is known and the missing slave is offline, so those samples are there.
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    text = await metrics();
    if (/iogate_di_pulses_total\{[^}]*circuit="1_01"\}/.test(text) && /iogate_slave_quality\{[^}]*slave="2",[^}]*quality="offline"\} 1/.test(text)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.match(text, /^iogate_slave_stale_seconds\{bus="BUS",slave="1",unit="1"\} \d/m);
  assert.match(text, /^iogate_slave_quality\{bus="BUS",slave="1",unit="1",quality="good"\} 1$/m);
  assert.match(text, /^iogate_slave_quality\{bus="GONE",slave="2",unit="7",quality="offline"\} 1$/m);
  assert.match(text, /^iogate_slave_stale_seconds\{bus="GONE",slave="2",unit="7"\} [1-9]/m, 'the age of a silent slave grows');
  assert.match(text, /^iogate_di_pulses_total\{bus="BUS",slave="1",unit="1",circuit="1_01"\} 0$/m);
  assert.match(text, /^iogate_sensor_age_seconds\{bus="OWBUS",circuit="\w+"\} \d/m);
  const { code, output } = await promtoolCheck(text);
  assert.equal(code, 0, output);
  assert.equal(output.trim(), '', `promtool found problems:\n${output}`);
  // promtool is not a pushover: a broken exposition fails.
  const broken = await promtoolCheck(`${text}iogate_bad{label="x" 1\n`);
  assert.notEqual(broken.code, 0);
});
