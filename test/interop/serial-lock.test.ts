import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';
import { SerialLink } from '../../src/transport/serial-link.js';
import { startPtyPair } from '../helpers/pty-pair.js';
import { tempDir } from '../helpers/temp-dir.js';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';

// A serial line another program holds (EVOK still running, a terminal
// program): serialport says "Cannot lock port"; iogate says which program
// holds the line. The line is a socat pty, the other program a second node
// process holding it with serialport's own exclusive lock.

test('a line held by another process: the message names it, in plain words', async () => {
  const dir = tempDir('iogate-lock-');
  const cable = await startPtyPair(join(dir, 'a'), join(dir, 'b'));
  const holderScript = `
    const { SerialPort } = require('serialport');
    const port = new SerialPort({ path: process.argv[1], baudRate: 19200, lock: true }, (error) => {
      if (error) { console.error(error.message); process.exit(1); }
      console.log('held');
    });
    setInterval(() => port.isOpen, 1000); // held until killed`;
  let after: () => Promise<void> = async () => undefined;
  const holder = endWithThisProcess(spawn(process.execPath, ['-e', holderScript, join(dir, 'a')], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] }));
  try {
    await once(holder.stdout!, 'data');
    const link = new SerialLink({ path: join(dir, 'a'), baudrate: 19200, parity: 'N', stopbits: 1 });
    after = () => link.close();
    await assert.rejects(
      link.open({ data: () => undefined, closed: () => undefined }),
      // socat keeps the pty's device open too, and is listed as well.
      new RegExp(`^Error: serial port ${join(dir, 'a')} is in use by another program, held by (.+, )?node \\(pid ${holder.pid}\\)(, .+)?; two masters on one line`),
    );
  } finally {
    await after();
    holder.kill();
    await once(holder, 'exit');
    await cable.stop();
  }
});
