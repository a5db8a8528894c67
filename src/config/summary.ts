// The startup banner: what the daemon is about to talk to and what it serves,
// on one screen, so a wrong config is visible before anything is polled.
import { edgeNodeIdOf } from './read-sparkplug.js';
import type { BusConfig, Config, DeviceConfig } from './types.js';

export function startupSummary(config: Config): string {
  const lines = [`Configuration: ${config.file ?? 'built-in (simulated Neuron brain board)'}`, 'Buses:'];
  if (config.buses.length === 0 && config.oneWireBuses.length === 0) lines.push('  (none)');
  for (const bus of config.buses) {
    lines.push(`  ${bus.name}: ${busLocation(bus)}, timeout ${bus.timeoutMs} ms, ${plural(bus.retries, 'retry', 'retries')}`);
    if (bus.devices.length === 0) lines.push('    (no devices)');
    for (const device of bus.devices) lines.push(`    ${deviceLine(device)}`);
  }
  for (const bus of config.oneWireBuses) {
    const where = bus.simulate ? `simulated owserver (${bus.simulate.join(', ')})` : `owserver ${bus.hostname}:${bus.port}`;
    lines.push(`  ${bus.name}: 1-Wire through ${where}, sensors read every ${bus.interval} s, bus searched every ${bus.scanInterval} s`);
  }
  lines.push(...outputRulesLines(config));
  const { apis } = config;
  const host = apis.address.includes(':') ? `[${apis.address}]` : apis.address;
  lines.push(
    'APIs:',
    `  HTTP       ${apis.tls ? 'https' : 'http'}://${host}:${apis.port}`,
    `  WebSocket  ${apis.websocket.enabled ? `on, ws://${host}:${apis.port}/ws` : 'off'}`,
    `  Panel      ${apis.panel.enabled ? `on, ${apis.tls ? 'https' : 'http'}://${host}:${apis.port}/` : 'off'}`,
    `  Webhook    ${apis.webhook.enabled ? `on, ${apis.webhook.complexEvents ? 'POST' : 'GET'} ${apis.webhook.address} for ${apis.webhook.deviceMask.join(', ')}` : 'off'}`,
    `  MQTT       ${mqttLine(config)}`,
    `  Sparkplug  ${sparkplugLine(config)}`,
    `  Modbus TCP ${modbusServerLine(config)}`,
    `  Access     ${accessLine(config)}`,
    `Aliases: ${config.aliasFile}`,
    `HW definitions: ${config.hwDefinitionDirs.length > 0 ? config.hwDefinitionDirs.join(', ') : 'built-in only'}`,
    `Logging: ${config.logging.level}${config.logging.file === undefined ? '' : ` to ${config.logging.file}`}`,
  );
  return lines.join('\n');
}

/** Interlocks and covers: the rules the write path enforces, so a wrong pairing shows before anything switches. */
function outputRulesLines(config: Config): string[] {
  if (config.interlocks.length === 0 && config.covers.length === 0) return [];
  const lines = ['Outputs:'];
  for (const group of config.interlocks) {
    lines.push(`  interlock ${group.outputs.join(' / ')}: never on together, ${group.dwellMs} ms between${group.switchOver ? ', a write switches the other off first' : ''}`);
  }
  for (const cover of config.covers) {
    const tilt = cover.tiltS === undefined ? '' : `, tilt ${cover.tiltS} s`;
    lines.push(`  cover ${cover.name}: up ${cover.up}, down ${cover.down}, travel ${cover.travelUpS} s up / ${cover.travelDownS} s down${tilt}`);
  }
  return lines;
}

function busLocation(bus: BusConfig): string {
  switch (bus.type) {
    case 'MODBUSTCP':
      return `Modbus TCP ${bus.hostname}:${bus.port}`;
    case 'MODBUSRTU':
      return `Modbus RTU ${bus.port} ${bus.baudrate} 8${bus.parity}${bus.stopbits}`;
    case 'SIMULATOR':
      return `simulator, inputs toggle ${bus.toggleMs > 0 ? `every ${bus.toggleMs} ms` : 'never'}`;
  }
}

function deviceLine(device: DeviceConfig): string {
  const rate = !device.scanEnabled ? 'scan off' : device.scanFrequency === 0 ? 'as fast as possible' : `${device.scanFrequency} Hz`;
  const inputs = device.scanEnabled && device.inputScanFrequency > 0 ? `, inputs ${device.inputScanFrequency} Hz` : '';
  const part = device.partOf === undefined ? '' : ` (${device.partOf})`;
  return `device ${device.name.padEnd(6)} model ${device.model.padEnd(6)} slave ${String(device.slaveId).padEnd(3)} ${rate}${inputs}${part}`;
}

function mqttLine(config: Config): string {
  const { mqtt } = config.apis;
  if (!mqtt.enabled) return 'off';
  const scheme = mqtt.tls === undefined ? 'mqtt' : 'mqtts';
  const discovery = mqtt.homeassistant.enabled ? `, Home Assistant discovery under ${mqtt.homeassistant.discoveryPrefix}/` : '';
  return `on, ${scheme}://${mqtt.address}:${mqtt.port} as ${mqtt.clientId}, topics ${mqtt.topicPrefix}/..., qos ${mqtt.qos}${discovery}`;
}

function modbusServerLine(config: Config): string {
  const server = config.apis.modbusServer;
  if (!server.enabled) return 'off';
  const host = server.address.includes(':') ? `[${server.address}]` : server.address;
  const allow = server.allow.length > 0 ? `clients ${server.allow.join(', ')}` : 'any local client';
  return `on, ${host}:${server.port}, iogate's own values at unit ${server.virtualUnit}, cache ${server.maxAgeMs} ms, writes ${server.write ? 'through the rules' : 'refused'}, ${allow}`;
}

function sparkplugLine(config: Config): string {
  const { sparkplug } = config.apis;
  if (!sparkplug.enabled) return 'off';
  const node = `${sparkplug.groupId}/${edgeNodeIdOf(config)}`;
  const host = sparkplug.primaryHostId === undefined ? 'no primary host' : `primary host ${sparkplug.primaryHostId}`;
  const { memoryMb, file, maxAgeS } = sparkplug.storeForward;
  const servers = sparkplug.servers.map((server) => server.url).join(', then ');
  return `on, edge node ${node} on ${servers}, ${host}, commands ${sparkplug.write ? 'write' : 'refused'}, store-and-forward ${memoryMb} MB${file ? ' + file' : ''} up to ${maxAgeS} s`;
}

function accessLine(config: Config): string {
  const { auth } = config.apis;
  if (auth.tokens.length === 0 && auth.users.length === 0) return 'no tokens: anyone who can reach the listener may read and write';
  const anonymous = auth.allowAnonymous ? 'anyone' : auth.loopbackAnonymous ? 'loopback only' : 'nobody';
  const users = auth.users.length === 0 ? '' : `, ${plural(auth.users.length, 'panel user', 'panel users')}`;
  return `${plural(auth.tokens.length, 'token', 'tokens')}${users}, without a token or login: ${anonymous}`;
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}
