// The Node options the service unit starts the daemon with, so benchmarks
// measure the daemon's memory and speed as it runs in production.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SERVICE_UNIT = fileURLToPath(new URL('../deploy/iogate.service', import.meta.url));

/** The `--…` words of `ExecStart=/usr/bin/node <options> …iogate.js`. */
export function serviceNodeOptions() {
  const execStart = /^ExecStart=(.*)$/m.exec(readFileSync(SERVICE_UNIT, 'utf8'))?.[1] ?? '';
  const words = execStart.trim().split(/\s+/);
  const script = words.findIndex((word) => word.endsWith('.js'));
  return words.slice(1, script).filter((word) => word.startsWith('--'));
}
