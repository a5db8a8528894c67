import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setAuditSink, type AuditEntry } from '../../../src/registry/audit-trail.js';
import { startMirrorAndEdge } from '../../helpers/sparkplug-gate.js';

// Writes through the brokers reach the audit log through the one write path,
// each named by its interface: `mqtt` for a command topic, `sparkplug` for a DCMD.

test('an MQTT command and a Sparkplug DCMD each make one audit entry with their own who', async () => {
  const entries: AuditEntry[] = [];
  setAuditSink((entry) => entries.push(entry));
  const waitForEntry = async (match: (entry: AuditEntry) => boolean): Promise<AuditEntry> => {
    for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 10))) {
      const found = entries.find(match);
      if (found) return found;
    }
    assert.fail(`no such entry among ${JSON.stringify(entries)}`);
  };
  const { host, observer, stop } = await startMirrorAndEdge('audited', ['plc1/ack/#', 'plc1/status']);
  try {
    await observer.waitFor('plc1/status', (text) => text === 'online');
    await observer.publish('plc1/cmd/do/1_02', '{"value": 1}', { qos: 1 });
    await observer.waitFor('plc1/ack/do/1_02');
    const byMqtt = await waitForEntry((e) => e.target === 'do/1_02');
    assert.deepEqual({ who: byMqtt.who, interface: byMqtt.interface, result: byMqtt.result }, { who: 'mqtt', interface: 'mqtt', result: 'ok' });

    await host.waitFor((m) => m.type === 'DBIRTH' && m.device === '1');
    const aliases = host.aliases('audited', '1');
    await host.command('audited', '1', [{ alias: aliases.get('do/1_03/value')!, type: 'Boolean', value: true }]);
    const bySparkplug = await waitForEntry((e) => e.target === 'do/1_03');
    assert.deepEqual({ who: bySparkplug.who, interface: bySparkplug.interface, result: bySparkplug.result }, { who: 'sparkplug', interface: 'sparkplug', result: 'ok' });
    assert.equal(entries.filter((e) => e.target === 'do/1_02' || e.target === 'do/1_03').length, 2, 'one entry per write');
  } finally {
    setAuditSink(undefined);
    await stop();
  }
});
