import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIELD_MAP, PointModel } from '../../../src/api/sparkplug/point-model.js';
import { builtinModels } from '../../../src/boards/builtin/index.js';
import { startGate, until } from '../../helpers/in-process.js';

// Every device type /rest/all can list has a Sparkplug mapping (metrics, or a
// stated reason for none), every mapped field exists on the devices, and the
// names and aliases are unique. Every built-in board model and every
// simulated 1-Wire chip kind is on the bus, so a new type cannot slip by.

test('every device type in /rest/all has its mapping, with unique names and aliases', async () => {
  const models = ['00', ...[...builtinModels.keys()].filter((name) => name !== '00')];
  const devices = models.map((model, index) => `      ${index + 1}:\n        model: "${model}"\n        slave-id: ${index + 1}`).join('\n');
  const gate = await startGate(`
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
${devices}
  OWBUS:
    type: OWFS
    interval: 1
    scan_interval: 1
    simulate: [28, 26, 29, 3A]
`);
  try {
    const bus = gate.runtime.oneWire[0]!.bus;
    await until(() => bus.sensors.size === 4, 'the simulated 1-Wire devices');
    const all = (await (await fetch(`${gate.baseUrl}/rest/all`)).json()) as Array<Record<string, unknown>>;
    const kinds = new Set(all.map((device) => String(device['dev'])));
    for (const kind of kinds) assert.ok(kind in FIELD_MAP, `device type '${kind}' of /rest/all has no Sparkplug mapping`);

    const model = new PointModel(gate.runtime.slaves, [bus]);
    const mappedFields = new Map<string, Set<string>>();
    const names = new Set<string>();
    const aliases = new Set<number>();
    for (const device of model.devices) {
      for (const point of device.points) {
        const key = `${device.id}/${point.name}`;
        assert.ok(!names.has(key), `duplicate metric ${key}`);
        assert.ok(!aliases.has(point.alias), `duplicate alias ${point.alias}`);
        names.add(key);
        aliases.add(point.alias);
        const [kind, , field] = point.name.split('/');
        if (!mappedFields.has(kind!)) mappedFields.set(kind!, new Set());
        mappedFields.get(kind!)!.add(field!);
      }
    }
    // Each listed device with metrics in its mapping got them; each mapped field was found on some device.
    for (const [kind, mapping] of Object.entries(FIELD_MAP)) {
      if (!Array.isArray(mapping) || !kinds.has(kind)) continue;
      for (const { field } of mapping) assert.ok(mappedFields.get(kind)?.has(field), `${kind}/…/${field} is mapped but no device has it`);
    }
    assert.deepEqual(
      model.devices.map((device) => device.id),
      [...models.map((_, index) => String(index + 1)), 'OWBUS'],
    );
    assert.ok(names.has('OWBUS/temp/' + [...bus.sensors.values()].find((s) => s.chip === 'DS18B20')!.circuit + '/value'));
  } finally {
    await gate.close();
  }
});
