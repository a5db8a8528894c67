// Default values that are decisions rather than plain EVOK code defaults,
// collected so each is stated (and justified) once.

/** EVOK reads autogen.yaml from this fixed path; ours can be moved with `autogen_file:`. */
export const DEFAULT_AUTOGEN_FILE = '/etc/evok/autogen.yaml';

/** Where EVOK keeps aliases; used when a config file is given so a swap keeps them. */
export const EVOK_ALIAS_FILE = '/var/lib/evok/alias.yaml';

/**
 * Without a config file the daemon runs a simulated Neuron brain board so it
 * can be tried on any machine; aliases then live next to where it was started.
 */
export const BUILT_IN_ALIAS_FILE = 'alias.yaml';

/**
 * EVOK listens on all interfaces when `address` is absent. We listen on
 * loopback unless told otherwise: the API has no authentication by default
 * and switches relays. EVOK's shipped config says 127.0.0.1 anyway.
 */
export const DEFAULT_API_ADDRESS = '127.0.0.1';
export const DEFAULT_API_PORT = 8080;

/**
 * A controller serves a handful of panels and SCADA links; these caps sit far
 * above that and far below what exhausts a small ARM board's memory or file
 * descriptors. A WebSocket client only sends short commands, so 64 KiB (the
 * HTTP body limit) is generous for one message.
 */
export const DEFAULT_MAX_CONNECTIONS = 256;
/** Half the total: a reverse proxy forwards everyone from one loopback address, so not much less. */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 128;
export const DEFAULT_MAX_WEBSOCKET_CLIENTS = 64;
export const DEFAULT_MAX_WEBSOCKET_MESSAGE_BYTES = 64 * 1024;

/**
 * Clients on a LAN send a request in milliseconds; a connection that trickles
 * its headers for 10 s is holding a slot on purpose. The whole-request bound
 * leaves room for a 64 KiB body over a slow VPN.
 */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Per-request timeouts in ms. A local TCP server answers within a few ms, but
 * a remote gateway may not; a serial slave that stays silent for 200 ms at
 * 19200 Bd is not going to answer, and waiting longer stalls the whole line.
 */
export const DEFAULT_TCP_TIMEOUT_MS = 1000;
export const DEFAULT_SERIAL_TIMEOUT_MS = 200;
export const DEFAULT_RETRIES = 1;

/**
 * owserver's port, where EVOK always looked. A DS18B20 conversion takes 750 ms
 * and owserver may convert before answering, so its requests get longer than
 * a Modbus request; EVOK's sensor and scan periods are kept.
 */
export const DEFAULT_OWSERVER_PORT = 4304;
export const DEFAULT_OWSERVER_TIMEOUT_MS = 3000;
export const DEFAULT_ONEWIRE_INTERVAL_S = 60;
export const DEFAULT_ONEWIRE_SCAN_INTERVAL_S = 300;
/** EVOK's replacement for a scan_interval of 0 or less. */
export const ONEWIRE_SCAN_INTERVAL_FALLBACK_S = 3600;

/**
 * A value is stale after five of its read periods (a line that loses a few
 * replies in a row is not yet stale) and never before half a second: at 50 Hz
 * a busy line would otherwise flap between good and stale. A slave turns
 * offline only after a second of silence, so stale comes first.
 */
export const DEFAULT_STALE_PERIODS = 5;
export const DEFAULT_STALE_MIN_MS = 500;

/**
 * Counter totals are saved every 10 s while pulses arrive (and at shutdown).
 * Each save stores the raw reading too, so a crash loses counts only if the
 * board also restarted before iogate read it again: then at most this long.
 * On flash storage that is 8640 small writes a day, moving pulses only.
 */
export const DEFAULT_COUNTER_SAVE_S = 10;

/** The configuration used when no file is given, as YAML so it goes through the same readers. */
export const BUILT_IN_CONFIG_YAML = `
apis:
  websocket:
    enabled: true
comm_channels:
  SIMULATED:
    type: SIMULATOR
    devices:
      1:
        model: '00'
        slave-id: 1
  OWBUS:
    type: OWFS
    interval: 10
    scan_interval: 60
    owpower: 1
    simulate: [28, 28, 26]
`;

/**
 * The audit log's bound on disk, all its files together: at about 250 bytes
 * an entry, some 80 000 changes, months of a busy controller's history.
 */
export const DEFAULT_AUDIT_MAX_MB = 20;
