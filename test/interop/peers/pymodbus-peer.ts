import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// Runs pymodbus_slave.py under Debian's Python and talks to it over its
// stdin/stdout command protocol.

const SCRIPT = fileURLToPath(new URL('./pymodbus_slave.py', import.meta.url));

export interface PymodbusPeer {
  child: ChildProcess;
  get(table: 'hr' | 'co', address: number, count: number): Promise<number[]>;
  stop(): Promise<void>;
}

export async function startPymodbus(args: string[]): Promise<PymodbusPeer> {
  const child = endWithThisProcess(spawn('/usr/bin/python3', [SCRIPT, ...args], { stdio: ['pipe', 'pipe', 'pipe'] }));
  let errors = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (errors += chunk));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = once(child, 'exit');
  const ready = await lines.next();
  if (ready.done || ready.value !== 'ready') {
    // A slave that cannot start (a Python module missing, say) must not be left
    // running, nor be reported as having said nothing: wait for its exit and
    // show what it printed.
    child.kill('SIGKILL');
    const [code, signal] = (await exited) as [number | null, string | null];
    const said = ready.done ? 'nothing' : `'${ready.value}'`;
    throw new Error(`pymodbus slave said ${said} and exited (${String(code ?? signal)}): ${errors}`);
  }
  return {
    child,
    async get(table, address, count) {
      child.stdin!.write(`get ${table} ${address} ${count}\n`);
      const { value } = await lines.next();
      return JSON.parse(String(value)) as number[];
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin!.end();
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
