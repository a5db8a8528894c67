// The OpenAPI 3.1 description of iogate's HTTP API, served at /openapi.json
// and shipped in the package. It describes what iogate answers, EVOK's API
// included (paths, fields and their JSON types), so tools and a validating
// proxy can check every request and reply. Built in code: the device schemas
// share their pieces, and the document cannot drift from one copy to another.

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const nullable = (type: string | string[]): Schema => ({ type: [...(Array.isArray(type) ? type : [type]), 'null'] });
const integer: Schema = { type: 'integer' };
const number: Schema = { type: 'number' };
const string: Schema = { type: 'string' };
const boolean: Schema = { type: 'boolean' };
const bit: Schema = { type: 'integer', enum: [0, 1] };
const strings: Schema = { type: 'array', items: string };
const range: Schema = { type: 'array', items: number, minItems: 2, maxItems: 2 };

/** The meta view's fields (`?meta=1`, `/ws?meta=1`, webhook `meta: true`), after the device's own: see docs/quality.md. */
const META_FIELDS: Record<string, Schema> = {
  quality: { enum: ['good', 'stale', 'offline', 'unknown'], description: 'Meta view only: how far the value can be trusted' },
  ts: { type: ['string', 'null'], description: 'Meta view only: ISO time of the last confirmed read or write' },
  age_s: { type: ['number', 'null'], description: 'Meta view only: seconds since ts, by the daemon\'s clock' },
  counter_total: { type: ['integer', 'null'], description: 'Meta view only, DIs: the never-decreasing total of the counter' },
};

/** A device object: EVOK's fields in EVOK's order, `alias` when one is set, and the meta view's fields when asked for. */
function device(dev: string | string[], required: Record<string, Schema>, optional: Record<string, Schema> = {}, description?: string): Schema {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    properties: { dev: Array.isArray(dev) ? { enum: dev } : { const: dev }, circuit: string, ...required, ...optional, alias: string, ...META_FIELDS },
    required: ['dev', 'circuit', ...Object.keys(required)],
    additionalProperties: false,
  };
}

const analogModes: Schema = {
  type: 'object',
  additionalProperties: { type: 'object', properties: { value: integer, unit: string, range } },
};

const DEVICES: Record<string, Schema> = {
  DigitalInput: device(
    'di',
    { value: nullable('integer'), debounce: nullable('integer'), counter_modes: strings, counter_mode: string, counter: nullable('integer'), mode: string, modes: strings },
    { ds_mode: string, ds_modes: strings, glob_dev_id: integer },
  ),
  DigitalOutput: device(
    'do',
    { value: nullable('integer'), pending: boolean, mode: string, modes: strings, pwm_freq: nullable('number'), pwm_duty: nullable('number') },
    { glob_dev_id: integer },
  ),
  Relay: device('ro', { value: nullable('integer') }),
  Led: device('led', { value: nullable('integer') }),
  AnalogInput: device('ai', { value: nullable('number'), unit: nullable('string'), mode: nullable('string'), modes: analogModes }, { range: nullable('array') }),
  AnalogOutput: device('ao', { mode: nullable('string'), modes: analogModes, value: nullable('number'), unit: nullable('string') }, { range: nullable('array') }),
  Watchdog: device('wd', { value: nullable('integer'), timeout: nullable('integer'), was_wd_reset: nullable('integer'), nv_save: bit }),
  Register: device('register', { value: nullable('integer') }),
  DataPoint: device('data_point', { value: { type: ['number', 'string', 'null'] } }, { name: string, valid: { type: ['boolean', 'integer'] }, unit: string }),
  ModbusSlave: device(
    'modbus_slave',
    {
      last_comm: nullable('number'),
      slave_id: integer,
      modbus_type: string,
      modbus_spec: string,
      scan_interval: number,
      online: boolean,
      state: { enum: ['online', 'degraded', 'offline'] },
      success_ratio: number,
      stale_s: nullable('number'),
      stats: { type: 'object' },
    },
    {
      model: { type: 'string', description: 'The board model (hw definition) of the slave (meta view only)' },
      product: { ...nullable('string'), description: 'The Unipi product the board belongs to, when configured (device_info; meta view only)' },
    },
    "EVOK's fields, then iogate's own: online, state, success_ratio, stale_s, stats; model and product in the meta view (?meta=1).",
  ),
  Thermometer: device('temp', { address: string, value: nullable('number'), lost: boolean, time: nullable('number'), interval: number, type: string }),
  MultiSensor: device('1wdevice', {
    humidity: nullable('number'),
    vdd: nullable('number'),
    vad: nullable('number'),
    temp: nullable('number'),
    vis: nullable('number'),
    lost: boolean,
    time: nullable('number'),
    interval: number,
    type: string,
  }, {}, 'DS2438: humidity, supply and sensed voltages, temperature.'),
  PioChip: device('1wdevice', { address: string, value: nullable('integer'), type: string, lost: boolean, time: nullable('number'), interval: number }, {}, 'DS2408, DS2406, DS2413, DS2404: the sensed pin levels as a bit mask.'),
  OneWireBus: device('owbus', { bus: string, scan_interval: number, interval: number, do_scan: boolean, do_reset: boolean }),
  Coil: device(['owpower', 'nv_save'], { value: bit }),
  DeviceInfo: device('device_info', { family: string, model: string, sn: { type: ['string', 'integer', 'null'] }, board_count: integer }),
  Cover: device(
    'cover',
    { position: nullable('integer'), tilt: nullable('integer'), moving: { enum: ['up', 'down', 'stopped', 'unknown'] }, calibrated: boolean, up: string, down: string },
    {},
    'iogate\'s own: a blind on an up and a down output (docs/outputs.md). Commands: command=open|close|stop, position=0..100, tilt=0..100.',
  ),
  Interlock: device(
    'interlock',
    { outputs: { type: 'array', items: string }, dwell_ms: integer, switch_over: boolean, on: { type: 'array', items: string } },
    {},
    'iogate\'s own, read-only: an interlock group (docs/outputs.md).',
  ),
  AliasManager: device('run', {
    save: boolean,
    aliases: { type: 'object', additionalProperties: { type: 'object', properties: { circuit: string, devtype: string }, required: ['circuit', 'devtype'] } },
  }),
};

const deviceTypes = ['di', 'do', 'ro', 'led', 'ai', 'ao', 'watchdog', 'register', 'data_point', 'modbus_slave', 'sensor', 'owbus', 'owpower', 'nv_save', 'device_info', 'run', 'cover', 'interlock'];
const alternateNames = ['input', 'digitalinput', 'output', 'digitaloutput', 'relay', 'analoginput', 'analogoutput', 'wd', 'temp', '1wdevice'];

const errorEnvelope: Schema = {
  type: 'object',
  description:
    "EVOK's error envelope. The key names the error: EVOK's own (KeyError, Exception, ValidationError, ValueError, TypeError, AttributeError, JSONDecodeError, ModbusIOException, ModbusException, ConnectionException) where EVOK has the case, iogate's (ModbusSlaveOffline, NotFound, MethodNotAllowed, Unauthorized, Forbidden, MisdirectedRequest, PayloadTooLarge, UnsupportedMediaType, …) where it has not.",
  properties: { success: { const: false }, errors: { type: 'object', minProperties: 1, additionalProperties: string } },
  required: ['success', 'errors'],
  additionalProperties: false,
};

const json = (schema: Schema) => ({ 'application/json': { schema } });
const errorReply = (description: string) => ({ description, content: json(ref('Error')) });

/** Every failure answers EVOK's envelope with a status that fits it. */
const ERROR_REPLIES = {
  '400': errorReply('Invalid value, field or body (ValidationError, ValueError, TypeError, JSONDecodeError, Exception)'),
  '401': errorReply('A token is needed (only with apis.auth.tokens)'),
  '403': errorReply('The token may not write, or a write from another site'),
  '404': errorReply('Unknown type (KeyError), circuit or alias (Exception), property (AttributeError) or path (NotFound)'),
  '405': errorReply('Method not allowed here'),
  '408': errorReply('The request body did not arrive in time'),
  '413': errorReply('Request body over 64 KiB'),
  '415': errorReply('Content type not supported'),
  '421': errorReply("The Host header does not name this machine"),
  '429': errorReply('Too many failed logins from this address or for this user: try again after Retry-After seconds'),
  '500': errorReply('The alias file could not be written'),
  '502': errorReply('The slave answered with a Modbus exception (ModbusException)'),
  '503': errorReply('Not sent: line down, slave offline, deadline passed or queue full'),
  '504': errorReply('Sent, but the slave did not confirm: it may or may not have applied the write (ModbusIOException)'),
  '507': errorReply('The alias file could not be written (disk full), or a pulse could not be noted in the state directory (refused, nothing switched)'),
};
const ERRORS = Object.fromEntries(Object.keys(ERROR_REPLIES).map((status) => [status, { $ref: `#/components/responses/Error${status}` }]));

const format = {
  name: 'format',
  in: 'path',
  required: true,
  description: '`rest` or `json`: the same data. A `rest` write takes a form or a JSON object, a `json` write a JSON object (read as JSON whatever its Content-Type).',
  schema: { enum: ['rest', 'json'] },
};
const typeParameter = {
  name: 'type',
  in: 'path',
  required: true,
  description: `Device type: ${deviceTypes.join(', ')}; or one of EVOK's alternate names: ${alternateNames.join(', ')}.`,
  schema: string,
};
const circuitParameter = { name: 'circuit', in: 'path', required: true, description: 'Circuit (`1_01`) or alias (`pump`, `al_pump`).', schema: string };
const propertyParameter = { name: 'property', in: 'path', required: true, description: "One of the device's fields.", schema: string };

const etagHeader = { ETag: { description: "SHA-1 of the body, as EVOK's", schema: string } };
const notModified = { '304': { description: 'The body has not changed since the ETag in If-None-Match' } };
const preflight = { summary: 'CORS preflight', tags: ['General'], responses: { '204': { description: 'No body' } } };

// A `do`, `ro` or `led` write may carry `pulse_ms` beside `value=1` (docs/outputs.md#pulses); any other type refuses it.
const PULSE_DESCRIPTION = 'do, ro and led only, with value=1: the output goes on now and the daemon switches it off after this many ms (1..86400000). Refused (400) elsewhere or without value=1; 409 on an interlocked or cover output that may not go on.';
const writeBody = {
  description: "Fields to write (see the type's writable fields). The reply shows the state the board confirmed. A `do`, `ro` or `led` write may add `pulse_ms` to `value=1`: on now, off after that many ms.",
  required: false,
  content: {
    'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { pulse_ms: { ...string, pattern: '^[0-9]+$', description: PULSE_DESCRIPTION } }, additionalProperties: string } },
    // Without `type`: EVOK also takes a bare JSON value; the properties apply to an object.
    'application/json': { schema: { properties: { value: {}, pulse_ms: { type: 'integer', minimum: 1, maximum: 86_400_000, description: PULSE_DESCRIPTION } } } },
    'text/plain': { schema: string },
  },
};

const writeReply = {
  description: 'Written and confirmed by the board',
  content: json({ type: 'object', properties: { success: { const: true }, result: ref('Device') }, required: ['success', 'result'], additionalProperties: false }),
};

const deviceRead = (schema: Schema, description: string) => ({
  description,
  headers: etagHeader,
  content: json(schema),
});

const jsonRpcRequest: Schema = {
  type: 'object',
  properties: { jsonrpc: {}, id: {}, method: {}, params: {} },
};

export function openApiDocument(version: string): Schema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'iogate',
      version,
      summary: "EVOK v3's API for Unipi-style PLCs, served by iogate",
      description:
        "iogate answers EVOK v3's HTTP API (paths, fields, JSON types and error envelope) and adds its own where EVOK has nothing: error statuses that fit the error, /metrics, /openapi.json, /trends and the control panel at /. The WebSocket at /ws is described in docs/api.md. Every path works with and without a trailing slash; HEAD answers like GET without the body.",
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: 'http://127.0.0.1:8080', description: 'The default listen address' }],
    tags: [{ name: 'Devices' }, { name: 'Batches' }, { name: 'General' }],
    security: [{}, { bearer: [] }],
    paths: {
      '/{format}/all': {
        parameters: [format],
        get: {
          summary: 'Every device',
          tags: ['Devices'],
          responses: { '200': deviceRead({ type: 'array', items: ref('Device') }, "Every device, in EVOK's type order"), ...notModified, ...ERRORS },
        },
        post: { summary: 'Nothing (as EVOK: 200 with an empty body)', tags: ['Devices'], requestBody: writeBody, responses: { '200': { description: 'Nothing written' }, ...ERRORS } },
        options: preflight,
      },
      '/{format}/{type}/all': {
        parameters: [format, typeParameter],
        get: {
          summary: 'Every device of a type',
          tags: ['Devices'],
          responses: { '200': deviceRead({ type: 'array', items: ref('Device') }, 'The devices of that type'), ...notModified, ...ERRORS },
        },
        options: preflight,
      },
      '/{format}/{type}/all/{property}': {
        parameters: [format, typeParameter, propertyParameter],
        get: {
          summary: 'One field of every device of a type',
          tags: ['Devices'],
          responses: {
            '200': deviceRead({ type: 'array', items: { type: 'object', properties: { circuit: string }, required: ['circuit'], minProperties: 2, maxProperties: 2 } }, '`[{"circuit": …, "<property>": …}]`'),
            ...notModified,
            ...ERRORS,
          },
        },
      },
      '/{format}/{type}/{circuit}': {
        parameters: [format, typeParameter, circuitParameter],
        get: { summary: 'One device', tags: ['Devices'], responses: { '200': deviceRead(ref('Device'), 'The device'), ...notModified, ...ERRORS } },
        post: { summary: 'Write a device', tags: ['Devices'], requestBody: writeBody, responses: { '200': writeReply, ...ERRORS } },
        options: preflight,
      },
      '/{format}/{type}/{circuit}/{property}': {
        parameters: [format, typeParameter, circuitParameter, propertyParameter],
        get: {
          summary: 'One field of a device',
          tags: ['Devices'],
          responses: { '200': deviceRead({ type: 'object', minProperties: 1, maxProperties: 1 }, '`{"<property>": …}`'), ...notModified, ...ERRORS },
        },
        post: { summary: 'Write a device (the property is ignored, as in EVOK)', tags: ['Devices'], requestBody: writeBody, responses: { '200': writeReply, ...ERRORS } },
      },
      '/bulk': {
        post: {
          summary: 'Queries and writes in one request',
          tags: ['Batches'],
          requestBody: { required: true, content: { 'application/json': { schema: ref('BulkRequest') }, 'application/x-www-form-urlencoded': { schema: {} }, 'text/plain': { schema: {} } } },
          responses: { '200': { description: 'Each item answers for itself; a failed item is an error envelope in its place', content: json(ref('BulkReply')) }, ...ERRORS },
        },
        options: preflight,
      },
      '/rpc': {
        post: {
          summary: 'JSON-RPC 2.0 (and 1.0): T_get, T_get_value, T_set for every type, and EVOK\'s own methods',
          tags: ['Batches'],
          requestBody: { required: true, content: { 'application/json': { schema: { oneOf: [jsonRpcRequest, { type: 'array', items: jsonRpcRequest }] } }, 'application/x-www-form-urlencoded': { schema: {} }, 'text/plain': { schema: {} } } },
          responses: {
            '200': { description: 'The answer, or the batch of answers', content: json({ oneOf: [ref('JsonRpcReply'), { type: 'array', items: ref('JsonRpcReply') }] }) },
            '204': { description: 'Only notifications: nothing to answer' },
            ...ERRORS,
          },
        },
        options: preflight,
      },
      '/version': {
        get: {
          summary: "The EVOK API version with iogate's own as build metadata",
          description: '`v3.0.6+iogate.<version>`: a client that reads the first three numbers gets the EVOK API version iogate implements.',
          tags: ['General'],
          responses: {
            '200': { description: 'The version text', headers: etagHeader, content: { 'text/html': { schema: { type: 'string', pattern: '^v3\\.\\d+\\.\\d+\\+iogate\\.' } } } },
            ...notModified,
            ...ERRORS,
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Modbus, 1-Wire and HTTP statistics in Prometheus text format',
          tags: ['General'],
          responses: { '200': { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: string } } }, ...ERRORS },
        },
      },
      '/trends': {
        get: {
          summary: 'The last hour of every analog input, analog output and 1-Wire value',
          description: 'Kept in the daemon in a bounded ring per value (one sample per step); the control panel draws its charts from it.',
          tags: ['General'],
          responses: { '200': { description: 'The series', content: json(ref('Trends')) }, ...ERRORS },
        },
      },
      '/config/reload': {
        post: {
          summary: 'Read the configuration again and apply what changed (token scope admin)',
          description:
            'The file is checked as at start-up; an invalid one changes nothing and answers 400 with one line per problem. A valid one is applied as a difference: unchanged buses keep polling, changed ones are rebuilt, API settings change in place. Without tokens configured only a client on the controller may reload. The body is ignored.',
          tags: ['General'],
          responses: { '200': { description: 'What happened to each part', content: json({ type: 'object', required: ['success', 'result'], properties: { success: { const: true }, result: { type: 'object' } } }) }, ...ERRORS },
        },
      },
      '/auth/login': {
        post: {
          summary: 'Log a panel user in (apis.auth.users): sets the HttpOnly, SameSite=Strict session cookie iogate_session',
          description: 'Failed logins are slowed per address and per user name (429 with Retry-After) and recorded in the audit log, never the password.',
          tags: ['General'],
          requestBody: {
            required: true,
            content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['user', 'password'], properties: { user: string, password: string } } }, 'application/json': { schema: { type: 'object', required: ['user', 'password'], properties: { user: string, password: string } } } },
          },
          responses: { '200': { description: 'Logged in', content: json({ type: 'object', properties: { success: { const: true }, result: { type: 'object', properties: { user: string, scope: string } } } }) }, ...ERRORS },
        },
      },
      '/auth/logout': {
        post: {
          summary: 'End the session of the cookie sent, and clear the cookie',
          tags: ['General'],
          responses: { '200': { description: 'Logged out', content: json({ type: 'object', properties: { success: { const: true }, result: { type: 'object', properties: { loggedOut: { type: 'boolean' } } } } }) }, ...ERRORS },
        },
      },
      '/auth/session': {
        get: {
          summary: 'Who the panel is logged in as, its scope, and whether users are configured',
          tags: ['General'],
          responses: { '200': { description: 'The session', content: json({ type: 'object', properties: { success: { const: true }, result: { type: 'object', properties: { user: { type: ['string', 'null'] }, scope: { type: ['string', 'null'] }, users: { type: 'boolean' } } } } }) }, ...ERRORS },
        },
      },
      '/audit': {
        get: {
          summary: 'Who changed what: writes from every interface, reloads, refused credentials (token scope admin)',
          description:
            'Without `since`, the latest `limit` entries; with it, the first `limit` entries strictly after it. Oldest first. Without tokens configured only a client on the controller may read it.',
          tags: ['General'],
          parameters: [
            { name: 'since', in: 'query', required: false, description: 'Unix milliseconds or an ISO 8601 time', schema: string },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
          ],
          responses: {
            '200': {
              description: 'The entries',
              content: json({
                type: 'array',
                items: {
                  type: 'object',
                  required: ['ts', 'who', 'from', 'interface', 'target', 'params', 'result'],
                  properties: { ts: string, who: string, from: string, interface: string, target: string, params: { type: 'object' }, result: string },
                },
              }),
            },
            ...ERRORS,
          },
        },
      },
      '/openapi.json': {
        get: { summary: 'This document', tags: ['General'], responses: { '200': { description: 'OpenAPI 3.1', content: json({ type: 'object' }) }, ...notModified, ...ERRORS } },
      },
      '/': {
        get: {
          summary: 'The control panel (apis.panel.enabled: false makes this a 404, as in EVOK)',
          tags: ['General'],
          responses: { '200': { description: 'One HTML page', content: { 'text/html': { schema: string } } }, ...notModified, ...ERRORS },
        },
      },
    },
    components: {
      responses: Object.fromEntries(Object.entries(ERROR_REPLIES).map(([status, reply]) => [`Error${status}`, reply])),
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'apis.auth.tokens; on loopback without tokens none is needed' } },
      schemas: {
        ...DEVICES,
        Device: { anyOf: Object.keys(DEVICES).map(ref) },
        Error: errorEnvelope,
        BulkRequest: {
          type: 'object',
          properties: {
            group_queries: { type: 'array', items: { type: 'object' } },
            group_assignments: { type: 'array', items: { type: 'object' } },
            individual_assignments: { type: 'array', items: { type: 'object' } },
          },
        },
        BulkReply: {
          type: 'object',
          properties: {
            group_queries: { type: 'array', items: { type: 'array', items: ref('Device') } },
            group_assignments: { type: 'array', items: { type: 'array', items: { anyOf: [ref('Device'), ref('Error')] } } },
            individual_assignments: { type: 'array', items: { anyOf: [ref('Device'), ref('Error')] } },
          },
          additionalProperties: false,
        },
        JsonRpcReply: {
          type: 'object',
          properties: { jsonrpc: { const: '2.0' }, id: {}, result: {}, error: { type: 'object', properties: { code: integer, message: string, data: {} }, required: ['code', 'message'] } },
          required: ['id'],
        },
        Trends: {
          type: 'object',
          properties: {
            step_s: { type: 'number', description: 'Seconds between two samples' },
            span_s: { type: 'number', description: 'Seconds a series covers at most' },
            now: { type: 'number', description: 'Unix time of the answer, s' },
            series: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  dev: string,
                  circuit: string,
                  field: { type: 'string', description: 'The field sampled: value, or temp / humidity / vad / vdd of a DS2438' },
                  unit: nullable('string'),
                  start: { type: 'number', description: 'Unix time of the first sample, s' },
                  values: { type: 'array', items: nullable('number'), description: 'One sample per step from start; null where nothing was read' },
                },
                required: ['dev', 'circuit', 'field', 'start', 'values'],
                additionalProperties: false,
              },
            },
          },
          required: ['step_s', 'span_s', 'now', 'series'],
          additionalProperties: false,
        },
      },
    },
  };
}
