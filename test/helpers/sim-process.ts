import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { endWithThisProcess } from './orphan-guard.mjs';

// Runs the bundled simulator (dist/iogate-sim.js) and waits until it serves.

export const SIM_BUNDLE = fileURLToPath(new URL('../../dist/iogate-sim.js', import.meta.url));

export interface SimProcess {
  child: ChildProcess;
  /** Base URL of the --control endpoint, when one was asked for. */
  controlUrl?: string;
  /** TCP port actually served, for --tcp. */
  tcpPort?: number;
  registers(unit: number, address: number, count: number, space?: 'holding' | 'input'): Promise<number[]>;
  setRegisters(unit: number, address: number, values: number[], space?: 'holding' | 'input'): Promise<void>;
  /** The simulator's own log of digital input edges since `since` (ms, wall clock). */
  inputChanges(unit: number, since?: number): Promise<Array<{ at: number; address: number; bit: number; on: boolean }>>;
  /** Make a board answer nothing (true) or answer again (false). */
  silence(unit: number, silent: boolean): Promise<void>;
  /** Modbus TCP connections the simulator holds open now. */
  connections(): Promise<number>;
  stop(): Promise<void>;
}

/** `prefix`: a command the simulator runs under, e.g. `ip netns exec <name>` (it must exec, so the PID is the simulator's). */
export async function startSim(args: string[], bundle = SIM_BUNDLE, prefix: string[] = []): Promise<SimProcess> {
  const argv = [...prefix, process.execPath, bundle, ...args];
  const child = endWithThisProcess(spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] }));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      output += chunk;
      if (/^serving /m.test(output)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`iogate-sim exited with ${code}: ${output}`)));
  });
  const controlUrl = /control on (http:\/\/\S+)/.exec(output)?.[1];
  const tcpPort = /on tcp \S+:(\d+)/.exec(output)?.[1];
  const control = () => {
    if (!controlUrl) throw new Error('simulator started without --control');
    return controlUrl;
  };
  return {
    child,
    controlUrl,
    tcpPort: tcpPort === undefined ? undefined : Number(tcpPort),
    async registers(unit, address, count, space = 'holding') {
      const response = await fetch(`${control()}/registers?unit=${unit}&space=${space}&address=${address}&count=${count}`);
      return ((await response.json()) as { values: number[] }).values;
    },
    async setRegisters(unit, address, values, space = 'holding') {
      const response = await fetch(`${control()}/registers`, {
        method: 'POST',
        body: JSON.stringify({ unit, space, address, values }),
      });
      if (!response.ok) throw new Error(await response.text());
    },
    async inputChanges(unit, since = 0) {
      const response = await fetch(`${control()}/inputs?unit=${unit}&since=${since}`);
      return ((await response.json()) as { changes: Array<{ at: number; address: number; bit: number; on: boolean }> }).changes;
    },
    async silence(unit, silent) {
      const response = await fetch(`${control()}/silence`, { method: 'POST', body: JSON.stringify({ unit, silent }) });
      if (!response.ok) throw new Error(await response.text());
    },
    async connections() {
      const response = await fetch(`${control()}/connections`);
      return ((await response.json()) as { modbus_tcp: number }).modbus_tcp;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Fails as soon as one of the outputs `sample` reads at the simulator is on, at any time within `ms`: nothing may switch on by itself. */
export async function staysOffAtSimulator(sample: () => Promise<boolean[]>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const now = await sample();
    assert.deepEqual(now, now.map(() => false), 'nothing switched on by itself');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
