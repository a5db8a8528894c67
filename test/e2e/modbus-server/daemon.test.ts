import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { RawModbusClient, pdu, registersOf } from '../../helpers/raw-modbus-client.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The server as a part of the running daemon: started with it, counted in
// /metrics, and restarted by a reload that changes apis.modbus_server, its
// clients' connections closed cleanly (they reconnect, as Modbus masters do).

function configText(maxAgeMs: number): string {
  return [
    'alias_file: alias.yaml',
    'apis:',
    '  modbus_server:',
    '    enabled: true',
    '    port: 0',
    `    max_age_ms: ${maxAgeMs}`,
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    toggle_ms: 0',
    '    devices:',
    '      1: {model: "00", slave-id: 1}',
    '',
  ].join('\n');
}

/** The port of the n-th "Modbus TCP server listening" line (1-based) once it is there. */
async function modbusPort(output: () => string, nth: number): Promise<number> {
  // Generous: a reload first waits for the file to stay unchanged for 2 s, and a loaded runner is slow.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ports = [...output().matchAll(/Modbus TCP server listening on 127\.0\.0\.1:(\d+)/g)].map((match) => Number(match[1]));
    if (ports.length >= nth) return ports[nth - 1]!;
    if (Date.now() > deadline) throw new Error(`no Modbus TCP server start #${nth} in:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function untilOutput(output: () => string, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!pattern.test(output())) {
    if (Date.now() > deadline) throw new Error(`no line matching ${pattern} in:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('started with the daemon, in /metrics, restarted by a reload that changes it', async () => {
  const file = join(tempDir('iogate-mbs-daemon-'), 'config.yaml');
  writeFileSync(file, configText(100));
  const daemon = await spawnDaemon(['--config', file], { tap: false });
  try {
    const port = await modbusPort(daemon.output, 1);
    const client = await RawModbusClient.connect(port);
    const reply = await client.request(1, pdu.read(3, 0, 2));
    assert.equal(reply[0], 3);
    assert.equal(registersOf(reply).length, 2);
    const metrics = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
    assert.match(metrics, /^iogate_modbus_server_requests_total 1$/m);
    assert.match(metrics, /^iogate_modbus_server_connections 1$/m);
    assert.match(daemon.output(), /Modbus TCP on, 127\.0\.0\.1:0/);

    writeFileSync(file, configText(50));
    daemon.child.kill('SIGHUP');
    await client.closedByServer();
    const next = await RawModbusClient.connect(await modbusPort(daemon.output, 2));
    assert.equal((await next.request(1, pdu.read(3, 0, 1)))[0], 3);
    // The reload's summary line comes once the whole reload is done, which may be after the new listener.
    await untilOutput(daemon.output, /configuration reloaded from .*modbus_server restarted/);
    next.close();
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});
