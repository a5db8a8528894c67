import { startSim, type SimProcess } from './sim-process.js';

// The standalone simulator as the client rig and the WSS tests poll it: a
// Brain section (unit 1, model 00: DIs, DOs, LEDs, analog values) and a relay
// section (unit 2, model 01: eight relays) over Modbus TCP, with the control
// endpoint through which a test moves an input and reads an output at the
// board itself, never through iogate. The relay section also runs alone
// (startRelayBoardSim) for the panel's and Home Assistant's files.

/** Register 0 of the Brain section holds the DI bits. */
const BRAIN_DI_REGISTER = 0;
/** Register 1 of the relay section holds the relays' bits. */
const RELAY_REGISTER = 1;

export function startBrainRelaySim(): Promise<SimProcess> {
  return startSim(['--model', '00', '--slave-id', '1', '--model', '01', '--slave-id', '2', '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--toggle-ms', '0']);
}

/**
 * The daemon's configuration polling both sections at `tcpPort` every 50 ms,
 * with the WebSocket on; `apis` lines (indented as under `apis:`) and top-level
 * lines (`top`) added as given.
 */
export function brainRelayConfig(tcpPort: number, { apis = [], top = [] }: { apis?: string[]; top?: string[] } = {}): string {
  return `${top.map((line) => `${line}\n`).join('')}apis:
  websocket:
    enabled: true
${apis.map((line) => `  ${line}\n`).join('')}comm_channels:
  PLC:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${tcpPort}
    devices:
      1:
        model: '00'
        slave-id: 1
        scan_frequency: 50
      2:
        model: '01'
        slave-id: 2
        scan_frequency: 50
`;
}

/** Sets digital input `index` (0-based) of the Brain section on the simulated board. */
export async function setBrainInput(sim: SimProcess, index: number, on: boolean): Promise<void> {
  const [bits] = await sim.registers(1, BRAIN_DI_REGISTER, 1);
  await sim.setRegisters(1, BRAIN_DI_REGISTER, [on ? bits! | (1 << index) : bits! & ~(1 << index)]);
}

/** Whether relay `index` (0-based) of the relay section is on, read at the simulated board. */
export async function relayAtSimulator(sim: SimProcess, index: number): Promise<boolean> {
  const [bits] = await sim.registers(2, RELAY_REGISTER, 1);
  return (bits! & (1 << index)) !== 0;
}

/** The relay section's unit; its DI bits are in holding register 0 (its relays in RELAY_REGISTER). */
const RELAY_UNIT = 2;
const RELAY_DI_REGISTER = 0;

/**
 * The relay section alone (an E-8DI8RO, model `01`, at unit 2), as the panel
 * and Home Assistant files run it; relayAtSimulator reads its relays too.
 */
export function startRelayBoardSim(): Promise<SimProcess> {
  return startSim(['--model', '01', '--slave-id', String(RELAY_UNIT), '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0']);
}

/** The relay board's bus for config.yaml, indented to sit under `comm_channels:`; `scanFrequency` leaves the default when not given. */
export function relayBoardBusYaml(sim: SimProcess, { name = 'BUS', scanFrequency }: { name?: string; scanFrequency?: number } = {}): string {
  return [
    `  ${name}:`,
    '    type: MODBUSTCP',
    '    hostname: 127.0.0.1',
    `    port: ${sim.tcpPort}`,
    '    devices:',
    `      ${RELAY_UNIT}:`,
    "        model: '01'",
    `        slave-id: ${RELAY_UNIT}`,
    ...(scanFrequency === undefined ? [] : [`        scan_frequency: ${scanFrequency}`]),
  ].join('\n');
}

/** Sets digital input `index` (0-based: di 2_01 is 0) of the relay board at the simulator, leaving the others as they are. */
export async function setRelayBoardInput(sim: SimProcess, index: number, on: boolean): Promise<void> {
  const [bits] = await sim.registers(RELAY_UNIT, RELAY_DI_REGISTER, 1);
  await sim.setRegisters(RELAY_UNIT, RELAY_DI_REGISTER, [on ? bits! | (1 << index) : bits! & ~(1 << index)]);
}
