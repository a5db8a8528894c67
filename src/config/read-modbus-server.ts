// Reads `apis.modbus_server`: the Modbus TCP gateway in front of the buses (docs/modbus-server.md).
import { allowEntryProblem } from '../api/modbus-server/allow-list.js';
import { DEFAULT_MAX_REQUESTS_PER_SECOND } from '../api/modbus-server/request-pacer.js';
import type { ModbusServerConfig } from './types.js';
import type { ConfigSection } from './section.js';

export const DEFAULT_MODBUS_SERVER_PORT = 5020;
export const DEFAULT_MODBUS_SERVER_ADDRESS = '127.0.0.1';

export function readModbusServer(section: ConfigSection): ModbusServerConfig {
  const config: ModbusServerConfig = {
    enabled: section.boolean('enabled', false),
    address: section.string('address', DEFAULT_MODBUS_SERVER_ADDRESS),
    port: section.integer('port', DEFAULT_MODBUS_SERVER_PORT, 0, 65535),
    maxAgeMs: section.integer('max_age_ms', 100, 0, 60_000),
    virtualUnit: section.integer('virtual_unit', 250, 1, 255),
    write: section.boolean('write', true),
    allow: section.stringList('allow', []),
    maxRequestsPerSecond: section.integer('max_requests_per_second', DEFAULT_MAX_REQUESTS_PER_SECOND, 1, 1_000_000),
  };
  for (const entry of config.allow) {
    const problem = allowEntryProblem(entry);
    if (problem !== undefined) section.error(section.value('allow')?.origin ?? section.at, 'allow', problem);
  }
  section.warnUnknownKeys();
  return config;
}
