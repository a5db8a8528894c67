import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../interop/free-port.js';
import { sleep } from './common.js';
import { tempDir } from '../helpers/temp-dir.js';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';

// Mosquitto for the MQTT part of the fuzz: on loopback, anonymous, no
// persistence, with its default message size limit (256 MB), so a huge
// command reaches iogate as any broker in its default setup would pass it.

export const MOSQUITTO = '/usr/sbin/mosquitto';

export interface Broker {
  port: number;
  child: ChildProcess;
}

export function mosquittoInstalled(): boolean {
  return existsSync(MOSQUITTO);
}

export async function startMosquitto(): Promise<Broker> {
  const port = await freePort();
  const dir = tempDir('iogate-fuzz-mosquitto-');
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\nlog_type error\n`);
  const child = endWithThisProcess(spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] }));
  child.stderr!.resume();
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && child.exitCode === null) {
    const accepting = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepting) return { port, child };
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`mosquitto did not start listening on ${port}`);
}
