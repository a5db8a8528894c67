import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMetrics } from '../../../src/api/http/metrics.js';
import type { EdgeNodeStats } from '../../../src/api/sparkplug/edge-node.js';
import { startupSummary } from '../../../src/config/summary.js';
import { loadConfig } from '../../../src/config/load.js';
import { describeSparkplug } from '../../../src/panel/sparkplug-status.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../helpers/temp-dir.js';

// The edge node's session as /metrics, the panel's status line and the
// start-up summary show it.

function stats(overrides: Partial<EdgeNodeStats>): EdgeNodeStats {
  return {
    server: 'mqtt://10.0.0.1:1883',
    connected: true,
    born: true,
    waitingForHost: false,
    bdSeq: 4,
    seq: 17,
    nodeBirths: 2,
    deviceBirths: 5,
    deviceDeaths: 1,
    dataMessages: 99,
    connects: 3,
    commands: { accepted: 7, refused: 2, malformed: 1, rebirthRequests: 1 },
    bufferDepth: 0,
    bufferCapacity: 69_905,
    bufferDropped: 0,
    replayed: 12,
    connectFailures: {},
    ...overrides,
  };
}

const render = (s: EdgeNodeStats) => renderMetrics({ buses: [], slaves: [], sparkplug: () => s });

test('/metrics counts failed connections by reason', () => {
  const text = render(stats({ connectFailures: { client_cert_revoked: 2, subscribe_denied: 1 } }));
  assert.match(text, /^iogate_sparkplug_connect_failures_total\{reason="client_cert_revoked"\} 2$/m);
  assert.match(text, /^iogate_sparkplug_connect_failures_total\{reason="subscribe_denied"\} 1$/m);
});

test('/metrics carries the session, commands and the buffer', () => {
  const text = render(stats({}));
  assert.match(text, /^iogate_sparkplug_connected\{server="mqtt:\/\/10\.0\.0\.1:1883"\} 1$/m);
  assert.match(text, /^iogate_sparkplug_bdseq 4$/m);
  assert.match(text, /^iogate_sparkplug_rebirth_requests_total 1$/m);
  assert.match(text, /^iogate_sparkplug_commands_total\{result="accepted"\} 7$/m);
  assert.match(text, /^iogate_sparkplug_commands_total\{result="refused"\} 2$/m);
  assert.match(text, /^iogate_sparkplug_device_births_total 5$/m);
  assert.match(text, /^iogate_sparkplug_buffer_dropped_total 0$/m);
  assert.doesNotMatch(renderMetrics({ buses: [], slaves: [] }), /sparkplug/);
});

test("the panel's status line reads the session from /metrics", () => {
  assert.deepEqual(describeSparkplug(render(stats({}))), { state: 'live', text: 'Sparkplug: live on mqtt://10.0.0.1:1883 (bdSeq 4)' });
  assert.equal(describeSparkplug(render(stats({ born: false, waitingForHost: true, bufferDepth: 3 })))?.text, 'Sparkplug: waiting for the primary host on mqtt://10.0.0.1:1883; 3 changes kept');
  assert.deepEqual(describeSparkplug(render(stats({ server: undefined, connected: false, born: false, bufferDepth: 1, bufferDropped: 2 }))), {
    state: 'down',
    text: 'Sparkplug: no server; 1 change kept, 2 dropped',
  });
  assert.equal(describeSparkplug(renderMetrics({ buses: [], slaves: [] })), undefined);
});

test('the start-up summary names the edge node, its servers and its store', () => {
  const dir = tempDir('iogate-spb-summary-');
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    'alias_file: alias.yaml\napis:\n  sparkplug:\n    enabled: true\n    group_id: plant1\n    edge_node_id: unipi-42\n    servers:\n      - url: mqtt://a:1883\n      - url: mqtts://b:8883\n    primary_host_id: scada\n    write: true\n    store_forward: {memory_mb: 8, file: true, max_age_s: 86400}\n',
  );
  const summary = startupSummary(loadConfig({ file }).config);
  assert.match(summary, /Sparkplug  on, edge node plant1\/unipi-42 on mqtt:\/\/a:1883, then mqtts:\/\/b:8883, primary host scada, commands write, store-and-forward 8 MB \+ file up to 86400 s/);
  assert.match(startupSummary(loadConfig({}).config), /Sparkplug  off/);
});

test('config: off by default, required keys and bad ids are refused', () => {
  assert.equal(loadConfig({}).config.apis.sparkplug.enabled, false);
  const dir = tempDir('iogate-spb-config-');
  const bad = (yaml: string) => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, `alias_file: alias.yaml\napis:\n  sparkplug:\n${yaml}`);
    return () => loadConfig({ file });
  };
  assert.throws(bad('    enabled: true\n    servers: [{url: "mqtt://a"}]\n'), /group_id/);
  assert.throws(bad('    enabled: true\n    group_id: g\n'), /servers/);
  assert.throws(bad('    enabled: true\n    group_id: "a/b"\n    servers: [{url: "mqtt://a"}]\n'), /group_id/);
  assert.throws(bad('    enabled: true\n    group_id: g\n    servers: [{url: "http://a"}]\n'), /url/);
});

test('edge_node_id defaults to the device_info serial number, else the host name', async () => {
  const { edgeNodeIdOf } = await import('../../../src/config/read-sparkplug.js');
  const { hostname } = await import('node:os');
  const fixture = new URL('../../../fixtures/config/neuron-l533.yaml', import.meta.url).pathname;
  const withSerial = loadConfig({ file: fixture }).config;
  assert.equal(edgeNodeIdOf(withSerial), '417');
  withSerial.apis.sparkplug.edgeNodeId = 'unipi-42';
  assert.equal(edgeNodeIdOf(withSerial), 'unipi-42');
  const builtIn = loadConfig({}).config;
  assert.equal(edgeNodeIdOf(builtIn), hostname().replace(/[/+#]/g, '_'));
});
