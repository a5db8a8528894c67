import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Gate } from '../../helpers/in-process.js';
import { startEdgeSession, type EdgeSession } from '../../helpers/sparkplug-gate.js';
import { TahuHost, type HostMessage } from '../../helpers/sparkplug-host.js';

// Sparkplug's seq is 0..255 and wraps to 0 after 255: a host that sees 256
// (or a gap) takes the session as broken and asks for a rebirth.

const NODE = 'wrap1';
let session: EdgeSession;
let host: TahuHost;
let gate: Gate;

before(async () => {
  session = await startEdgeSession(NODE, { write: false });
  ({ host, gate } = session);
});

after(async () => {
  await session?.stop();
});

test('seq wraps from 255 to 0 without a gap over 300 messages', async () => {
  await host.waitFor((m) => m.edgeNode === NODE && m.type === 'DBIRTH');
  const aliases = host.aliases(NODE, '1');
  const input = aliases.get('di/1_01/value');
  const isChange = (from: number, on: boolean) => (m: HostMessage) =>
    m.edgeNode === NODE && m.type === 'DDATA' && m.index >= from && m.metrics.some((x) => x.alias === input && x.value === on);
  for (let i = 0; i < 300; i++) {
    const on = i % 2 === 0;
    const from = host.messages.length;
    gate.setInput(0, on);
    await host.waitFor(isChange(from, on));
  }
  const seqs = host.messages.filter((m) => m.edgeNode === NODE && !m.type.endsWith('CMD')).map((m) => Number(m.seq));
  assert.ok(seqs.length > 256, `${seqs.length} messages`);
  assert.ok(Math.max(...seqs) <= 255, `seq stays within 0..255 (max ${Math.max(...seqs)})`);
  assert.deepEqual(host.seqGaps(NODE), []);
});
