import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TahuHost, type HostMessage } from '../helpers/sparkplug-host.js';
import { Mosquitto } from './peers/mosquitto.js';
import { SparkplugRig, untilTrue as until } from './peers/sparkplug-rig.js';

// Store-and-forward against mosquitto: the broker is gone for 30 s while the
// simulator toggles its inputs; afterwards the host (Tahu's codec) has every
// edge the simulator logged in that window, as historical DDATA, in order.
// Then the same with a daemon restart in the middle of the outage, the
// buffer kept in its file.

const GROUP = 'plant';
const OUTAGE_MS = 30_000;
/**
 * The simulator steps its inputs this often; iogate scans at 50 Hz, so it
 * sees every edge, even on a loaded machine where a scan may come a second late.
 */
const TOGGLE_MS = 1000;
/** Margin for the moment the edge node noticed the loss, and for a scan in flight when it stops. */
const NOTICE_MS = 200;
/**
 * How late after an edge its change may be stamped: a scan period, plus what
 * a loaded machine may delay it. Less than two toggle periods, so an edge
 * cannot be matched with the next edge to the same value.
 */
const SEEN_WITHIN_MS = 1500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Window {
  from: number;
  to: number;
}

/**
 * Every input edge of unit 1 (DI 1_01..1_04, bits 0..3 of register 0) the
 * simulator logged inside the windows must be in the host's history: a
 * historical metric of the same input with the same value, stamped within
 * SEEN_WITHIN_MS after the edge; and each input's history alternates in time order
 * within each window.
 */
async function checkHistory(rig: SparkplugRig, host: TahuHost, windows: Window[]): Promise<number> {
  const node = rig.edgeNodeId;
  const aliases = host.aliases(node, '1');
  const historical = host.messages
    .filter((m: HostMessage) => m.edgeNode === node && m.type === 'DDATA')
    .flatMap((m) => m.metrics.filter((metric) => metric.isHistorical));
  const times = historical.map((metric) => metric.timestamp!);
  assert.deepEqual(times, [...times].sort((a, b) => a - b), 'historical changes arrive oldest first');
  const edges = (await rig.sim.inputChanges(1, windows[0]!.from)).filter((edge) => edge.address === 0 && windows.some((w) => edge.at >= w.from && edge.at <= w.to));
  assert.ok(edges.length >= 20, `the simulator made enough edges (${edges.length})`);
  for (let bit = 0; bit < 4; bit++) {
    const alias = aliases.get(`di/1_0${bit + 1}/value`);
    const history = historical.filter((metric) => metric.alias === alias);
    // Within one daemon's run the history alternates (across a restart the edges while it was down are unseen).
    for (const w of windows) {
      const inWindow = history.filter((metric) => metric.timestamp! >= w.from && metric.timestamp! <= w.to);
      for (let i = 1; i < inWindow.length; i++) assert.notEqual(inWindow[i]!.value, inWindow[i - 1]!.value, `di/1_0${bit + 1}: history alternates`);
    }
    for (const edge of edges.filter((e) => e.bit === bit)) {
      const found = history.some((metric) => metric.value === edge.on && metric.timestamp! >= edge.at && metric.timestamp! <= edge.at + SEEN_WITHIN_MS);
      assert.ok(found, `di/1_0${bit + 1} → ${edge.on} at ${edge.at} is in the host's history (windows ${JSON.stringify(windows)}; history ${JSON.stringify(history.map((m) => [m.value, m.timestamp]))})`);
    }
  }
  return edges.length;
}

test('a 30 s broker outage: every input edge of the window reaches the host as historical DDATA, in order', async () => {
  const broker = await Mosquitto.start();
  let host = await TahuHost.connect(broker.url, GROUP);
  const rig = await SparkplugRig.start({ servers: [broker.url], toggleMs: TOGGLE_MS });
  try {
    await host.waitFor((m) => m.edgeNode === rig.edgeNodeId && m.type === 'DBIRTH' && m.device === '1', 15_000, 'DBIRTH');
    await host.close();
    await broker.kill('SIGKILL');
    const from = Date.now() + NOTICE_MS;
    await sleep(OUTAGE_MS);
    const to = Date.now();
    await broker.run();
    host = await TahuHost.connect(broker.url, GROUP);
    await host.waitFor((m) => m.edgeNode === rig.edgeNodeId && m.type === 'NBIRTH', 30_000, 'NBIRTH after the outage');
    await until(async () => (await rig.metric('iogate_sparkplug_buffer_changes')) === 0, 'the buffer to drain');
    assert.equal(await rig.metric('iogate_sparkplug_buffer_dropped_total'), 0);
    assert.ok((await rig.metric('iogate_sparkplug_replayed_total')) > 0);
    await checkHistory(rig, host, [{ from, to }]);
    assert.deepEqual(host.seqGaps(rig.edgeNodeId), []);
  } finally {
    await rig.stop();
    await host.close();
    await broker.kill('SIGTERM');
  }
});

test('with file: true, a daemon restart during the outage loses none of the buffered changes', async () => {
  const broker = await Mosquitto.start();
  let host = await TahuHost.connect(broker.url, GROUP);
  const rig = await SparkplugRig.start({ servers: [broker.url], toggleMs: TOGGLE_MS, storeForward: { file: true } });
  try {
    await host.waitFor((m) => m.edgeNode === rig.edgeNodeId && m.type === 'DBIRTH' && m.device === '1', 15_000, 'DBIRTH');
    await host.close();
    await broker.kill('SIGKILL');
    const first = { from: Date.now() + NOTICE_MS, to: 0 };
    await sleep(OUTAGE_MS / 2);
    // An edge just before the stop may be scanned after the node stopped listening to changes.
    first.to = Date.now() - NOTICE_MS;
    await rig.restartDaemon('SIGTERM');
    // From the first scan of the new daemon on (it listens once every slave was scanned).
    const second = { from: Date.now() + NOTICE_MS, to: 0 };
    await sleep(OUTAGE_MS / 2);
    second.to = Date.now();
    await broker.run();
    host = await TahuHost.connect(broker.url, GROUP);
    await host.waitFor((m) => m.edgeNode === rig.edgeNodeId && m.type === 'NBIRTH', 30_000, 'NBIRTH after the outage');
    await until(async () => (await rig.metric('iogate_sparkplug_buffer_changes')) === 0, 'the buffer to drain');
    assert.equal(await rig.metric('iogate_sparkplug_buffer_dropped_total'), 0);
    await checkHistory(rig, host, [first, second]);
  } finally {
    await rig.stop();
    await host.close();
    await broker.kill('SIGTERM');
  }
});
