import { busCycleMs } from '../../devices/slave/cycle-guard.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import { counterTotalOf } from '../../devices/digital/di.js';
import type { Quality } from '../../devices/quality/point-meta.js';
import type { ModbusBus, TransactionCounters } from '../../modbus/bus.js';
import type { OneWireBus } from '../../onewire/bus.js';
import type { EdgeNodeStats } from '../sparkplug/edge-node.js';
import type { MqttLinkStats } from '../mqtt/connection.js';
import type { ConnectFailureCounts } from '../mqtt/connect-failure.js';
import type { ModbusServerStats } from '../modbus-server/stats.js';
import type { AdmissionStats } from './admission.js';
import type { WebhookStats } from '../webhook.js';
import type { AutomationFigures, EngineStats } from '../../automations/engine.js';

// `GET /metrics`: per-bus and per-slave Modbus statistics in the Prometheus
// text exposition format (version 0.0.4), so a line that degrades (timeouts,
// CRC errors, reconnects, scan overruns) shows up on a dashboard before the
// I/O it carries goes stale.

export interface MetricsSource {
  readonly buses: readonly ModbusBus[];
  readonly slaves: readonly SlaveUnit[];
  readonly oneWire?: ReadonlyArray<{ bus: OneWireBus }>;
  /** Admission and its parking lot: a connection flood shows here. */
  readonly http?: AdmissionStats;
  /** The Sparkplug edge node's session, when it runs (set once it started). */
  sparkplug?: () => EdgeNodeStats;
  /** The MQTT mirror's broker link, when it runs. */
  mqtt?: () => MqttLinkStats;
  /** The Modbus TCP server, while it runs: its counters and open connections. */
  modbusServer?: () => { stats: ModbusServerStats; connections: number };
  /** The outgoing webhook, when enabled: a receiver that hangs or fails shows here. */
  readonly webhook?: WebhookStats;
  /** `automations:`: runs and writes attributed to each (`automation:<id>`), loops stopped. */
  readonly automations?: { figures(): AutomationFigures[]; readonly stats: EngineStats };
}

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string | number>;
type Sample = [Labels, number];

interface Family {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  samples: Sample[];
}

const TRANSACTION_COUNTERS: ReadonlyArray<[keyof TransactionCounters, string, string]> = [
  ['requests', 'requests_total', 'Requests put on the wire, retries included.'],
  ['responses', 'responses_total', 'Well-formed replies, exception replies included.'],
  ['timeouts', 'timeouts_total', 'Requests that got no valid reply in time.'],
  ['retries', 'retries_total', 'Requests sent again after a timeout or a malformed reply.'],
  ['exceptions', 'exceptions_total', 'Modbus exception replies.'],
  ['corruptFrames', 'corrupt_frames_total', 'Received frames dropped for a CRC or framing error.'],
  ['lateReplies', 'late_replies_total', 'Replies that came after their request had timed out.'],
  ['misaddressedReplies', 'misaddressed_replies_total', 'Replies with another unit id than the request on the wire (serial lines).'],
];

const QUALITIES: readonly Quality[] = ['good', 'stale', 'offline', 'unknown'];

export function renderMetrics({ buses, slaves, oneWire = [], http, sparkplug, mqtt, webhook, automations, modbusServer }: MetricsSource): string {
  // Ages are taken on the monotonic clock (point-meta.ts).
  const now = performance.now();
  const families: Family[] = [];
  const busStats = buses.map((bus) => ({ bus, stats: bus.stats() }));
  for (const [key, suffix, help] of TRANSACTION_COUNTERS) {
    families.push({
      name: `iogate_bus_${suffix}`,
      type: 'counter',
      help,
      samples: busStats.map(({ bus, stats }) => [{ bus: bus.name }, stats[key]]),
    });
  }
  families.push(
    {
      name: 'iogate_bus_reconnects_total',
      type: 'counter',
      help: 'Times the link was lost or could not be opened and a reconnect was scheduled.',
      samples: busStats.map(({ bus, stats }) => [{ bus: bus.name }, stats.reconnects]),
    },
    {
      name: 'iogate_bus_connected',
      type: 'gauge',
      help: '1 while the serial port is open or the TCP connection is up.',
      samples: busStats.map(({ bus, stats }) => [{ bus: bus.name }, stats.connected ? 1 : 0]),
    },
    {
      name: 'iogate_bus_dropped_requests_total',
      type: 'counter',
      help: 'Requests dropped before reaching the wire: deadline passed, client gone, or too many waiting.',
      samples: busStats.map(({ bus, stats }) => [{ bus: bus.name }, stats.dropped]),
    },
    {
      name: 'iogate_bus_cycle_seconds',
      type: 'gauge',
      help: 'Longest smoothed time between two scans of a slave on this bus (0 until measured).',
      samples: buses.map((bus) => [{ bus: bus.name }, busCycleMs(bus, slaves) / 1000]),
    },
  );

  const slaveLabels = (slave: SlaveUnit): Labels => ({ bus: slave.bus.name, slave: slave.name, unit: slave.unit });
  const unitStats = slaves.map((slave) => ({ slave, stats: slave.bus.unitStats(slave.unit) }));
  for (const [key, suffix, help] of TRANSACTION_COUNTERS) {
    families.push({
      name: `iogate_slave_${suffix}`,
      type: 'counter',
      help,
      samples: unitStats.map(({ slave, stats }) => [slaveLabels(slave), stats[key]]),
    });
  }
  const perSlave = (name: string, type: Family['type'], help: string, value: (slave: SlaveUnit) => number): Family => ({
    name,
    type,
    help,
    samples: slaves.map((slave) => [slaveLabels(slave), value(slave)]),
  });
  families.push(
    perSlave('iogate_slave_online', 'gauge', '1 while the slave answers (online or degraded); 0 while starting or offline.', (s) =>
      s.answering ? 1 : 0,
    ),
    perSlave('iogate_slave_degraded', 'gauge', '1 while the slave answers only part of its requests.', (s) => (s.state === 'degraded' ? 1 : 0)),
    perSlave('iogate_slave_success_ratio', 'gauge', 'Share of the last (up to 50) attempts the slave answered.', (s) => s.successRatio),
    perSlave('iogate_slave_stale_seconds', 'gauge', 'Age of the oldest of the values every scan of the slave reads (-1 before each was read once); alert on it to catch frozen data.', (s) => {
      const age = s.cache.stalestAgeMs(now);
      return age === null ? -1 : age / 1000;
    }),
    {
      name: 'iogate_slave_quality',
      type: 'gauge',
      help: 'Quality of the slave\'s most often read values: 1 for the current one of good, stale, offline, unknown (never read).',
      samples: slaves.flatMap((slave) => {
        const current = slave.quality(now);
        return QUALITIES.map((quality): Sample => [{ ...slaveLabels(slave), quality }, quality === current ? 1 : 0]);
      }),
    },
    perSlave('iogate_slave_scans_total', 'counter', 'Completed scans.', (s) => s.stats.scans),
    perSlave('iogate_slave_failed_scans_total', 'counter', 'Scans (or offline probes) that failed.', (s) => s.stats.failedScans),
    perSlave('iogate_slave_scan_overruns_total', 'counter', 'Scan slots skipped because the previous scan was still running.', (s) => s.stats.overruns),
    perSlave('iogate_slave_last_scan_seconds', 'gauge', 'Duration of the last scan.', (s) => s.stats.lastScanMs / 1000),
    perSlave('iogate_slave_scan_interval_seconds', 'gauge', 'Configured scan period (0 = as fast as the bus allows).', (s) => s.scanPeriodMs / 1000),
  );
  families.push({
    name: 'iogate_di_pulses_total',
    type: 'counter',
    help: 'Pulses a DI counted in all, across wraps and board resets (counter_total; DIs that keep one, once read).',
    samples: slaves.flatMap((slave) =>
      slave.devices.flatMap((device): Sample[] => {
        const total = counterTotalOf(device);
        return typeof total === 'number' ? [[{ ...slaveLabels(slave), circuit: device.circuit }, total]] : [];
      }),
    ),
  });
  families.push(...oneWireFamilies(oneWire.map(({ bus }) => bus), now));
  if (http) families.push(...httpFamilies(http));
  if (sparkplug) families.push(...sparkplugFamilies(sparkplug()));
  if (mqtt) families.push(...mqttFamilies(mqtt()));
  if (webhook) families.push(...webhookFamilies(webhook));
  if (automations && automations.figures().length > 0) families.push(...automationFamilies(automations.figures(), automations.stats));
  if (modbusServer) families.push(...modbusServerFamilies(modbusServer()));
  return families.map(renderFamily).join('');
}

function automationFamilies(figures: AutomationFigures[], stats: EngineStats): Family[] {
  const per = (pick: (figure: AutomationFigures) => number): Sample[] => figures.map((figure) => [{ automation: figure.id }, pick(figure)]);
  return [
    { name: 'iogate_automation_runs_total', type: 'counter', help: 'Times the automation ran its actions.', samples: per((f) => f.runs) },
    {
      name: 'iogate_automation_writes_total',
      type: 'counter',
      help: 'Writes made by the automation (attributed automation:<id>) through the write path, by result.',
      samples: figures.flatMap((f): Sample[] => [[{ automation: f.id, result: 'ok' }, f.writes - f.failedWrites], [{ automation: f.id, result: 'failed' }, f.failedWrites]]),
    },
    { name: 'iogate_automation_enabled', type: 'gauge', help: '1 while the automation acts.', samples: per((f) => (f.enabled ? 1 : 0)) },
    { name: 'iogate_automation_offloaded', type: 'gauge', help: "1 while the board's firmware runs the automation.", samples: per((f) => (f.offloaded ? 1 : 0)) },
    single('iogate_automation_loops_stopped_total', 'counter', 'Automations disabled by the loop guard (too deep a chain, or too many chained runs).', stats.loopsStopped),
  ];
}

/** A family of one sample. */
function single(name: string, type: Family['type'], help: string, value: number, labels: Labels = {}): Family {
  return { name, type, help, samples: [[labels, value]] };
}

function httpFamilies(http: AdmissionStats): Family[] {
  const { parking } = http;
  return [
    single('iogate_http_connections', 'gauge', 'HTTP connections holding a slot (parked ones hold none).', http.open),
    single('iogate_http_requests_total', 'counter', 'HTTP requests received, WebSocket upgrades not included.', http.requests),
    single('iogate_http_evicted_total', 'counter', 'Connections let go to make room for a newcomer.', http.evicted),
    single('iogate_http_refused_total', 'counter', 'Connections closed on arrival: no slot, and no room in the parking lot.', http.refused),
    single('iogate_http_parked_connections', 'gauge', 'Connections waiting in the parking lot.', parking.parked),
    single('iogate_http_parked_total', 'counter', 'Connections parked: their address, or every slot, was taken by connections that work.', parking.parkedTotal),
    single('iogate_http_parked_requests_total', 'counter', 'Requests of parked connections carried into HTTP.', parking.requests),
    {
      name: 'iogate_http_parked_closed_total',
      type: 'counter',
      help: 'Parked connections closed by iogate: junk (no complete request head in time), idle (kept long enough), evicted (for a newcomer, the lot being full).',
      samples: [
        [{ reason: 'junk' }, parking.closedJunk],
        [{ reason: 'idle' }, parking.closedIdle],
        [{ reason: 'evicted' }, parking.evicted],
      ],
    },
    {
      name: 'iogate_http_socket_errors_total',
      type: 'counter',
      help: 'Client connections that ended in an error, by code: a reset, a broken pipe, a request timeout, HPE = a request HTTP could not parse; each is logged at DEBUG and closes that connection only.',
      samples: Object.entries(http.socketErrors.counts).map(([code, count]): Sample => [{ code }, count]),
    },
  ];
}

function modbusServerFamilies({ stats, connections }: { stats: ModbusServerStats; connections: number }): Family[] {
  return [
    single('iogate_modbus_server_connections', 'gauge', 'Modbus TCP client connections open.', connections),
    single('iogate_modbus_server_connections_total', 'counter', 'Modbus TCP client connections accepted.', stats.connections),
    single('iogate_modbus_server_refused_connections_total', 'counter', 'Modbus TCP connections refused: not on the allow list, or over the connection bounds.', stats.refusedConnections),
    single('iogate_modbus_server_requests_total', 'counter', 'Modbus TCP requests received.', stats.requests),
    {
      name: 'iogate_modbus_server_exceptions_total',
      type: 'counter',
      help: 'Exception replies by exception code (1 illegal function, 2 illegal address, 4 refused or failed, 6 busy, 11 board not answering).',
      samples: [...stats.exceptions].sort(([a], [b]) => a - b).map(([code, count]): Sample => [{ code: String(code) }, count]),
    },
    single('iogate_modbus_server_cache_hits_total', 'counter', 'Reads answered from the poll cache.', stats.cacheHits),
    single('iogate_modbus_server_passthroughs_total', 'counter', 'Requests sent on to a board through the bus queue.', stats.passthroughs),
    {
      name: 'iogate_modbus_server_writes_total',
      type: 'counter',
      help: 'Writes carried out, by client (modbus:<address>; past 64 clients the rest count as other).',
      samples: [...stats.writesBy].map(([who, count]): Sample => [{ client: who }, count]),
    },
    single('iogate_modbus_server_refused_writes_total', 'counter', 'Writes refused: a rule (interlock, cover, pulse) or the server being read-only.', stats.refusedWrites),
    single('iogate_modbus_server_protocol_errors_total', 'counter', 'Connections closed for a stream that is not Modbus TCP, a stalled frame or unread replies.', stats.protocolErrors),
  ];
}

function mqttFamilies(stats: MqttLinkStats): Family[] {
  return [
    single('iogate_mqtt_connected', 'gauge', '1 while the MQTT mirror is connected to its broker.', stats.connected ? 1 : 0),
    failureFamily('iogate_mqtt_connect_failures_total', 'Failed broker connections (and denied subscriptions and publishes), by reason: TLS trust, client certificate, login, ACL, reachability.', stats.failures),
  ];
}

/** One sample per reason seen; the reasons are a fixed set (connect-failure.ts). */
function failureFamily(name: string, help: string, counts: ConnectFailureCounts): Family {
  return { name, type: 'counter', help, samples: Object.entries(counts).map(([reason, count]): Sample => [{ reason }, count]) };
}

function sparkplugFamilies(stats: EdgeNodeStats): Family[] {
  const { commands } = stats;
  return [
    failureFamily('iogate_sparkplug_connect_failures_total', 'Failed server connections (and denied subscriptions, sessions dropped right after the birth), by reason: TLS trust, client certificate, login, ACL, reachability.', stats.connectFailures),
    single('iogate_sparkplug_connected', 'gauge', '1 while connected to a server; the label names it.', stats.connected ? 1 : 0, { server: stats.server ?? '' }),
    single('iogate_sparkplug_born', 'gauge', '1 while the node is born (NBIRTH sent on this connection).', stats.born ? 1 : 0),
    single('iogate_sparkplug_waiting_for_host', 'gauge', '1 while connected but waiting for the primary host to be online.', stats.waitingForHost ? 1 : 0),
    single('iogate_sparkplug_bdseq', 'gauge', 'bdSeq of the current (or last) connection (-1 before the first).', stats.bdSeq ?? -1),
    single('iogate_sparkplug_connects_total', 'counter', 'Successful MQTT connections.', stats.connects),
    single('iogate_sparkplug_node_births_total', 'counter', 'NBIRTH messages sent.', stats.nodeBirths),
    single('iogate_sparkplug_device_births_total', 'counter', 'DBIRTH messages sent.', stats.deviceBirths),
    single('iogate_sparkplug_device_deaths_total', 'counter', 'DDEATH messages sent.', stats.deviceDeaths),
    single('iogate_sparkplug_data_messages_total', 'counter', 'NDATA and DDATA messages sent.', stats.dataMessages),
    single('iogate_sparkplug_rebirth_requests_total', 'counter', 'Rebirths a host asked for (after a seq gap, usually).', commands.rebirthRequests),
    {
      name: 'iogate_sparkplug_commands_total',
      type: 'counter',
      help: 'Metric writes of DCMD/NCMD: accepted (confirmed by the board), refused (invalid, read-only, unknown, write off, failed), malformed (undecodable payloads dropped).',
      samples: [
        [{ result: 'accepted' }, commands.accepted],
        [{ result: 'refused' }, commands.refused],
        [{ result: 'malformed' }, commands.malformed],
      ],
    },
    single('iogate_sparkplug_buffer_changes', 'gauge', 'Changes held for store-and-forward.', stats.bufferDepth),
    single('iogate_sparkplug_buffer_capacity', 'gauge', 'Changes the store-and-forward memory cap holds.', stats.bufferCapacity),
    single('iogate_sparkplug_buffer_dropped_total', 'counter', 'Buffered changes dropped (cap reached, too old, or their metric is gone).', stats.bufferDropped),
    single('iogate_sparkplug_replayed_total', 'counter', 'Buffered changes sent as historical DDATA.', stats.replayed),
  ];
}

function webhookFamilies(webhook: WebhookStats): Family[] {
  const { failed } = webhook;
  return [
    single('iogate_webhook_up', 'gauge', '1 while deliveries succeed; 0 from a failed attempt until one succeeds again.', webhook.up ? 1 : 0),
    single('iogate_webhook_pending_devices', 'gauge', 'Devices not delivered yet (in the request out now or waiting), each once in its latest state.', webhook.pending),
    single('iogate_webhook_retry_seconds', 'gauge', 'Pause before the next retry while failing (0 when up).', webhook.retryMs / 1000),
    single('iogate_webhook_deliveries_total', 'counter', 'Requests the receiver answered with a status below 400.', webhook.delivered),
    {
      name: 'iogate_webhook_failed_total',
      type: 'counter',
      help: 'Failed attempts: no complete answer by the deadline (the request is then aborted), an error status, or a connection error.',
      samples: [
        [{ reason: 'timeout' }, failed.timeout],
        [{ reason: 'status' }, failed.status],
        [{ reason: 'network' }, failed.network],
      ],
    },
    single('iogate_webhook_superseded_total', 'counter', 'Changes dropped unsent because the device changed again before delivery; its latest state went instead.', webhook.superseded),
  ];
}

function oneWireFamilies(buses: readonly OneWireBus[], now: number): Family[] {
  const perBus = (name: string, type: Family['type'], help: string, value: (bus: OneWireBus) => number): Family => ({
    name,
    type,
    help,
    samples: buses.map((bus) => [{ bus: bus.name }, value(bus)]),
  });
  const sensors = (bus: OneWireBus) => [...bus.sensors.values()];
  return [
    perBus('iogate_owbus_requests_total', 'counter', 'Requests sent to owserver (searches and reads).', (bus) => bus.stats.requests),
    perBus('iogate_owbus_failed_requests_total', 'counter', 'owserver requests that failed, timed out or got an unreadable reply.', (bus) => bus.stats.failures),
    perBus('iogate_owbus_connected', 'gauge', '1 while owserver answered the last search of the bus.', (bus) => (bus.connected ? 1 : 0)),
    perBus('iogate_owbus_sensors', 'gauge', '1-Wire devices found on the bus.', (bus) => bus.sensors.size),
    perBus('iogate_owbus_lost_sensors', 'gauge', '1-Wire devices whose last read failed or that left the bus.', (bus) => sensors(bus).filter((sensor) => sensor.lost).length),
    {
      name: 'iogate_sensor_age_seconds',
      type: 'gauge',
      help: 'Time since the last good read of a 1-Wire device (-1 before the first).',
      samples: buses.flatMap((bus) =>
        sensors(bus).map((sensor): Sample => {
          const { confirmedAt } = sensor.pointMeta(now);
          return [{ bus: bus.name, circuit: sensor.circuit }, confirmedAt === 0 ? -1 : (now - confirmedAt) / 1000];
        }),
      ),
    },
  ];
}

function renderFamily({ name, type, help, samples }: Family): string {
  let text = `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
  for (const [labels, value] of samples) {
    const rendered = renderLabels(labels);
    text += rendered === '' ? `${name} ${value}\n` : `${name}{${rendered}} ${value}\n`;
  }
  return text;
}

function renderLabels(labels: Labels): string {
  return Object.entries(labels)
    .map(([key, value]) => `${key}="${escapeLabel(String(value))}"`)
    .join(',');
}

/** Label values escape backslash, double quote and line feed. */
function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}
