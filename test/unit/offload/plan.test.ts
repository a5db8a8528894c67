import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BoardModel } from '../../../src/boards/model.js';
import { brain00, e16di14di0A, e16di14ro08, e8di8ro01 } from '../../../src/boards/builtin/neuron.js';
import { planOffload, type BoardPoint, type OffloadRequest } from '../../../src/automations/offload/plan.js';

// Which rules the firmware can carry out, from the register maps alone, and
// the reason given for each it cannot.

const boards: Record<string, BoardModel> = { '1': brain00, '2': e8di8ro01, '3': e16di14di0A, '4': e16di14ro08 };

function locate(name: string): BoardPoint | undefined {
  const match = /^(di|do|ro|led) (\d+)_(\d+)$/.exec(name);
  if (!match) return undefined;
  const model = boards[match[2]!];
  if (!model) return undefined;
  const type = match[1]!.toUpperCase();
  const number = Number(match[3]);
  for (const feature of model.features) {
    if (feature.type !== type || !('count' in feature)) continue;
    const start = 'start_index' in feature ? feature.start_index ?? 0 : 0;
    if (number - 1 - start >= 0 && number - 1 - start < feature.count) return { board: match[2]!, model, feature, index: number - 1 - start };
  }
  return undefined;
}

const guarded = new Map([
  ['ro 2_03', 'is in interlock group pumps'],
  ['ro 2_04', "is cover blind's up relay"],
]);
const context = { locate, guard: (output: string) => guarded.get(output) };

function reasonFor(request: Omit<OffloadRequest, 'id'>): string | undefined {
  const plan = planOffload(context, [{ id: 'r', ...request }]);
  if (plan.accepted.length === 1) return undefined;
  return plan.refused[0]!.reason;
}

test('an input and its paired output on the same board are offloaded in each mode', () => {
  const plan = planOffload(context, [
    { id: 'a', input: 'di 1_01', output: 'do 1_01', mode: 'follow' },
    { id: 'b', input: 'di 2_02', output: 'ro 2_02', mode: 'inverted' },
    { id: 'c', input: 'di 4_14', output: 'ro 4_14', mode: 'toggle' },
  ]);
  assert.deepEqual(plan.refused, []);
  assert.deepEqual(
    plan.accepted.map((p) => [p.request.id, p.board, p.input.direct_reg, p.bit, p.inverted, p.toggle]),
    [
      ['a', '1', 1014, 0, false, false],
      ['b', '2', 1018, 1, true, false],
      ['c', '4', 1026, 13, false, true],
    ],
  );
});

test('refusals name the reason', () => {
  const cases: Array<[Omit<OffloadRequest, 'id'>, RegExp]> = [
    [{ input: 'di 1_01', output: 'ro 2_01', mode: 'follow' }, /different boards \(1, 2\)/],
    [{ input: 'di 3_01', output: 'di 3_02', mode: 'follow' }, /di 3_02 is not a digital or relay output/],
    [{ input: 'di 1_01', output: 'do 1_02', mode: 'follow' }, /drives only its paired output \(channel 1 of the board's first DO group\), not do 1_02/],
    [{ input: 'di 1_01', output: 'led 1_01', mode: 'follow' }, /led 1_01 is not a digital or relay output/],
    [{ input: 'di 4_15', output: 'ro 4_14', mode: 'follow' }, /di 4_15 drives no output/],
    [{ input: 'di 2_03', output: 'ro 2_03', mode: 'follow' }, /ro 2_03 is in interlock group pumps; the firmware would switch it past that rule/],
    [{ input: 'di 2_04', output: 'ro 2_04', mode: 'toggle' }, /ro 2_04 is cover blind's up relay/],
    [{ input: 'di 9_01', output: 'ro 9_01', mode: 'follow' }, /input di 9_01 is not a device iogate knows/],
    [{ input: 'do 1_01', output: 'do 1_01', mode: 'follow' }, /do 1_01 is not a digital input/],
    [{ input: 'di 1_01', output: 'do 1_01', mode: 'edge' as never }, /only follow, invert or toggle .*mode 'edge'/],
    [{ input: 'di 1_01', output: 'do 1_01', mode: 'press' as never }, /mode 'press'/],
  ];
  for (const [request, reason] of cases) assert.match(reasonFor(request) ?? 'accepted', reason, JSON.stringify(request));
});

test('a board whose map has no DirectSwitch registers is refused', () => {
  // 0A has inputs only; give it a pretend output so only the missing registers are left to refuse.
  const withRelay: BoardModel = { ...e16di14di0A, features: [...e16di14di0A.features, { type: 'RO', count: 4, val_reg: 2, val_coil: 0 }] };
  const plan = planOffload(
    { locate: (name) => (name === 'ro 3_01' ? { board: '3', model: withRelay, feature: withRelay.features.at(-1)!, index: 0 } : { ...locate(name)!, model: withRelay }), guard: () => undefined },
    [{ id: 'x', input: 'di 3_01', output: 'ro 3_01', mode: 'follow' }],
  );
  assert.match(plan.refused[0]!.reason!, /register map of board 3 \(model 0A\) has no DirectSwitch registers for di 3_01/);
});

test('a map without a mode in ds_modes refuses that mode', () => {
  const input = { ...brain00.features[0]!, ds_modes: ['Simple'] } as BoardModel['features'][number];
  const model: BoardModel = { ...brain00, features: [input, ...brain00.features.slice(1)] };
  const plan = planOffload(
    { locate: (name) => { const point = locate(name)!; return { ...point, model, feature: point.feature.type === 'DI' ? input : point.feature }; }, guard: () => undefined },
    [{ id: 'x', input: 'di 1_01', output: 'do 1_01', mode: 'toggle' }, { id: 'y', input: 'di 1_02', output: 'do 1_02', mode: 'follow' }],
  );
  assert.match(plan.refused[0]!.reason!, /offers no DirectSwitch mode Toggle/);
  assert.deepEqual(plan.accepted.map((p) => p.request.id), ['y']);
});

test('two rules on one input: the second is refused', () => {
  const plan = planOffload(context, [
    { id: 'first', input: 'di 1_01', output: 'do 1_01', mode: 'follow' },
    { id: 'second', input: 'di 1_01', output: 'do 1_01', mode: 'toggle' },
  ]);
  assert.deepEqual(plan.refused, [{ id: 'second', offloaded: false, reason: 'di 1_01 is already offloaded by rule first' }]);
});
