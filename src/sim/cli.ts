import type { Server } from 'node:net';
import { parseArgs } from 'node:util';
import { builtinModels } from '../boards/builtin/index.js';
import type { BoardModel } from '../boards/model.js';
import { products } from '../boards/products.js';
import { boardsFor } from '../boards/resolve.js';
import { SerialLink } from '../transport/serial-link.js';
import { controlServer } from './control-server.js';
import { rtuResponder } from './rtu-responder.js';
import { Simulation } from './simulation.js';
import { modbusTcpServer } from './tcp-server.js';
import { SimulatedOneWire, owserverTcpServer } from './onewire.js';

// iogate-sim: simulated Unipi boards on a real serial port or a Modbus TCP
// port, for trying the daemon (or any other master) without hardware.

const USAGE = `Usage: iogate-sim --model MODEL --slave-id N [--model M2 --slave-id N2 ...]
                  (--rtu PATH [--baud B] [--parity N|E|O] [--stopbits 1|2] | --tcp HOST:PORT)
                  [--toggle-ms MS] [--control HOST:PORT]
                  [--owserver HOST:PORT [--ow-devices 28,28,26]]
       iogate-sim --owserver HOST:PORT [--ow-devices 28,28,26]

  --model MODEL     built-in board model (00, 01, xS11, ...) or product (M503, L203, ...), as in
                    config.yaml; repeat with --slave-id per model
  --slave-id N      Modbus unit id of the preceding --model (a product's boards: N, N+1, ...)
  --rtu PATH        serve Modbus RTU on this serial port (default 19200 8N1)
  --tcp HOST:PORT   serve Modbus TCP on this address (port 0 = any free port)
  --toggle-ms MS    step the digital inputs every MS ms (default 0: inputs stay still)
  --control H:P     HTTP endpoint for tests: GET/POST /registers, GET /stats, GET /connections
  --owserver H:P    serve simulated 1-Wire devices with the owserver protocol on this address
  --ow-devices LIST 1-Wire family codes, one device each (default 28,28,26: two DS18B20, one DS2438)
`;

class UsageError extends Error {}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string', multiple: true },
      'slave-id': { type: 'string', multiple: true },
      rtu: { type: 'string' },
      baud: { type: 'string', default: '19200' },
      parity: { type: 'string', default: 'N' },
      stopbits: { type: 'string', default: '1' },
      tcp: { type: 'string' },
      'toggle-ms': { type: 'string', default: '0' },
      control: { type: 'string' },
      owserver: { type: 'string' },
      'ow-devices': { type: 'string', default: '28,28,26' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return undefined;
  const models = values.model ?? [];
  const ids = values['slave-id'] ?? [];
  const modbus = models.length > 0 || values.rtu !== undefined || values.tcp !== undefined || values.owserver === undefined;
  if (modbus && (models.length === 0 || models.length !== ids.length)) {
    throw new UsageError('give one --slave-id for each --model (at least one board)');
  }
  const slaves = models.flatMap((name, i) => slavesOf(name, integerArg(ids[i]!, '--slave-id', 1, 247)));
  if (new Set(slaves.map((s) => s.unit)).size !== slaves.length) throw new UsageError('--slave-id values must differ');
  if (modbus && (values.rtu === undefined) === (values.tcp === undefined)) throw new UsageError('give exactly one of --rtu and --tcp');
  const owDevices = values['ow-devices'].split(',').map((family) => family.trim()).filter((family) => family !== '');
  const parity = parityArg(values.parity);
  const stopbits = integerArg(values.stopbits, '--stopbits', 1, 2) as 1 | 2;
  return {
    slaves,
    rtu: values.rtu === undefined ? undefined : { path: values.rtu, baudrate: integerArg(values.baud, '--baud', 50, 4_000_000), parity, stopbits },
    tcp: values.tcp === undefined ? undefined : hostPort(values.tcp, '--tcp'),
    toggleMs: integerArg(values['toggle-ms'], '--toggle-ms', 0, 86_400_000),
    control: values.control === undefined ? undefined : hostPort(values.control, '--control'),
    owserver: values.owserver === undefined ? undefined : { at: hostPort(values.owserver, '--owserver'), devices: oneWireArg(owDevices) },
  } as const;
}

/** A board, or a product's boards at consecutive slave ids, as the daemon reads `model:` (src/boards/resolve.ts). */
function slavesOf(name: string, unit: number): Array<{ unit: number; model: BoardModel }> {
  const boards = boardsFor(name, new Map());
  if (!boards) throw new UsageError(`unknown model '${name}' (boards: ${[...builtinModels.keys()].join(', ')}; products: ${[...products.keys()].join(', ')})`);
  const last = unit + boards.length - 1;
  if (last > 247) throw new UsageError(`--model ${name} is ${boards.length} boards at slave ids ${unit}..${last}: above 247`);
  return boards.map((model, i) => ({ unit: unit + i, model }));
}

function oneWireArg(families: string[]): SimulatedOneWire {
  try {
    return new SimulatedOneWire(families);
  } catch (error) {
    throw new UsageError(`--ow-devices: ${(error as Error).message}`);
  }
}

function parityArg(text: string): 'N' | 'E' | 'O' {
  const parity = text.toUpperCase();
  if (parity === 'N' || parity === 'E' || parity === 'O') return parity;
  throw new UsageError(`--parity must be N, E or O, got '${text}'`);
}

function integerArg(text: string, name: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new UsageError(`${name} must be an integer ${min}..${max}, got '${text}'`);
  return value;
}

function hostPort(text: string, name: string): { host: string; port: number } {
  const colon = text.lastIndexOf(':');
  if (colon <= 0) throw new UsageError(`${name} must be HOST:PORT, got '${text}'`);
  return { host: text.slice(0, colon), port: integerArg(text.slice(colon + 1), `${name} port`, 0, 65535) };
}

function listen(server: Server, { host, port }: { host: string; port: number }): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // Once listening, only accept() fails here: that one connection is lost, the simulator serves on.
      server.on('error', (error) => process.stderr.write(`iogate-sim: ${host}:${port}: ${error.message}\n`));
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

async function main(): Promise<void> {
  let options;
  try {
    options = parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`iogate-sim: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (!options) {
    process.stdout.write(USAGE);
    return;
  }
  const simulation = new Simulation(options.slaves, options.toggleMs);
  const units = options.slaves.map((s) => `${s.model.name}@${s.unit}`).join(', ');
  const stoppers: Array<() => unknown> = [];
  // Before the first "serving" line: a parent that stops us as soon as it reads it gets a clean exit.
  const shutdown = () => {
    simulation.stop();
    for (const stop of stoppers) void stop();
    process.exit(0);
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);

  // Made before the control API, which counts its connections; it listens below.
  const tcpServer = options.tcp ? modbusTcpServer(simulation.boards) : undefined;
  const connections = tcpServer
    ? () => new Promise<number>((resolve) => tcpServer.getConnections((error, count) => resolve(error ? 0 : count)))
    : undefined;
  if (options.control) {
    const server = controlServer(simulation.boards, connections);
    const port = await listen(server, options.control);
    stoppers.push(() => server.close());
    // Tests wait for these lines rather than polling.
    process.stderr.write(`control on http://${options.control.host}:${port}\n`);
  }
  if (options.tcp && tcpServer) {
    const server = tcpServer;
    const port = await listen(server, options.tcp);
    stoppers.push(() => server.close());
    process.stderr.write(`serving ${units} on tcp ${options.tcp.host}:${port}\n`);
  }
  if (options.rtu) {
    const { path, baudrate, parity, stopbits } = options.rtu;
    const link = new SerialLink(options.rtu);
    await link.open({
      data: rtuResponder(simulation.boards, (frame) => link.write(frame)),
      closed: (reason) => {
        process.stderr.write(`iogate-sim: ${reason}\n`);
        process.exit(1);
      },
    });
    stoppers.push(() => link.close());
    process.stderr.write(`serving ${units} on rtu ${path} ${baudrate} 8${parity}${stopbits}\n`);
  }
  if (options.owserver) {
    const { at, devices } = options.owserver;
    const server = owserverTcpServer(devices);
    const port = await listen(server, at);
    stoppers.push(() => server.close());
    process.stderr.write(`serving 1-Wire ${devices.addresses.join(', ')} as owserver on tcp ${at.host}:${port}\n`);
  }
  simulation.start();
}

main().catch((error: Error) => {
  process.stderr.write(`iogate-sim: ${error.message}\n`);
  process.exit(1);
});
