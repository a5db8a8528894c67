// Reads `automations:` and `location:` from config.yaml. Every problem is
// recorded with file:line and the key path (automations.<id>.when.edge …),
// so one run reports them all; the engine only ever sees a checked shape.
import { ConfigSection } from '../config/section.js';
import type { TreeNode } from '../config/yaml-tree.js';
import { formatOrigin } from '../config/yaml-tree.js';
import type { Action, AutomationConfig, Condition, Edge, LocationConfig, Press, QualityWanted, TimeOfDay, Trigger } from './types.js';
import type { DeviceType } from '../devices/device.js';
import { canonicalType } from '../registry/type-names.js';

/** A pulse or a staircase of more than a day is a schedule (the control layer's bound on pulse_ms). */
const MAX_ON_S = 86_400;
const MAX_DELAY_S = 86_400;
/** Steps of one automation: a sequence is a few steps, not a program. */
const MAX_ACTIONS = 64;
/** Outputs switched by one step (a scene). */
const MAX_SCENE = 64;
/** Automations of one file: far above any house, low enough to bound memory and CPU. */
export const MAX_AUTOMATIONS = 5000;
const DEFAULT_LONG_S = 0.8;
const DEFAULT_DOUBLE_S = 0.4;

const EDGES: readonly Edge[] = ['rising', 'falling', 'any'];
const PRESSES: readonly Press[] = ['short', 'long', 'double'];
const QUALITIES: readonly QualityWanted[] = ['good', 'stale', 'offline', 'bad'];
/** Day names as JavaScript counts them: 0 is Sunday. */
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const ALL_DAYS: readonly number[] = [0, 1, 2, 3, 4, 5, 6];
const ID = /^[A-Za-z0-9_-]{1,64}$/;
/** `type/circuit` or an alias (the alias rules of alias-store, loosely: the registry has the last word). */
const REFERENCE = /^([a-z_]+\/[A-Za-z0-9_.:-]+|[A-Za-z0-9_.-]+)$/;

export function readLocation(root: ConfigSection): LocationConfig {
  const section = root.section('location');
  const latitude = section.has('latitude') ? section.number('latitude', 0, -90) : undefined;
  const longitude = section.has('longitude') ? section.number('longitude', 0, -180) : undefined;
  if (latitude !== undefined && latitude > 90) section.error(section.at, 'latitude', 'expected a number -90..90');
  if (longitude !== undefined && longitude > 180) section.error(section.at, 'longitude', 'expected a number -180..180');
  const timeZone = section.optionalString('time_zone');
  if (timeZone !== undefined && !validZone(timeZone)) section.error(section.value('time_zone')!.origin, 'time_zone', `'${timeZone}' is not a time zone this system knows (e.g. Europe/Prague, UTC)`);
  section.warnUnknownKeys();
  return { latitude, longitude, timeZone };
}

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export function readAutomations(root: ConfigSection, location: LocationConfig): AutomationConfig[] {
  const automations: AutomationConfig[] = [];
  const section = root.section('automations');
  const children = section.children();
  if (children.length > MAX_AUTOMATIONS) section.error(section.at, undefined, `at most ${MAX_AUTOMATIONS} automations`);
  for (const { name, section: entry } of children.slice(0, MAX_AUTOMATIONS)) {
    if (!ID.test(name)) entry.error(entry.at, undefined, 'an automation id may hold only letters, digits, _ and - (at most 64)');
    const automation = readAutomation(name, entry, location);
    if (automation) automations.push(automation);
  }
  // References between automations, once all are known.
  const ids = new Set(automations.map((automation) => automation.id));
  for (const automation of automations) {
    for (const action of automation.actions) {
      if (action.kind === 'enable' && !ids.has(action.automation)) {
        section.findings.error(undefined, `${automation.where}: automations.${automation.id}.then: no automation '${action.automation}' to ${action.enabled ? 'enable' : 'disable'}`);
      }
    }
  }
  return automations;
}

function readAutomation(id: string, section: ConfigSection, location: LocationConfig): AutomationConfig | undefined {
  const before = section.findings.errorTexts().length;
  if (!section.has('when')) section.missing('when', 'the trigger, e.g. {input: di/1_01, edge: rising}');
  if (!section.has('then')) section.missing('then', 'the action(s), e.g. {output: do/1_01, set: on}');
  const trigger = section.has('when') ? readTrigger(section.section('when'), location) : undefined;
  const conditions = listOf(section, 'if').map((item) => readCondition(item));
  const actions = listOf(section, 'then').map((item) => readAction(item));
  if (actions.length > MAX_ACTIONS) section.error(section.at, 'then', `at most ${MAX_ACTIONS} steps`);
  const enabled = section.boolean('enabled', true);
  const offload = section.has('offload') ? section.choice('offload', ['firmware', 'none'] as const, 'none') : 'none';
  section.markKnown('when', 'then', 'if');
  section.warnUnknownKeys();
  if (!trigger || actions.some((action) => action === undefined) || conditions.some((condition) => condition === undefined)) return undefined;
  const automation: AutomationConfig = {
    id,
    trigger,
    conditions: conditions as Condition[],
    actions: actions as Action[],
    enabled,
    offload: offload === 'firmware' ? 'firmware' : undefined,
    where: formatOrigin(section.at),
  };
  checkShape(automation, section);
  return section.findings.errorTexts().length === before ? automation : undefined;
}

/** Rules that tie the trigger to the actions. */
function checkShape(automation: AutomationConfig, section: ConfigSection): void {
  const { trigger, actions } = automation;
  const follows = actions.filter((action) => action.kind === 'follow');
  if (follows.length > 0) {
    if (actions.length > 1) section.error(section.at, 'then', 'follow makes the output the input: it cannot be combined with other steps');
    if (trigger.kind !== 'edge' || (trigger.edge !== 'level' && trigger.edge !== 'any')) section.error(section.at, 'then', 'follow needs a trigger on an input\'s level: when: {input: di/1_01}');
  } else if (trigger.kind === 'edge' && trigger.edge === 'level') {
    section.error(section.at, 'when', "no edge: say edge: rising, falling or any (an input without an edge is for 'follow')");
  }
  if (automation.offload === 'firmware') {
    const problem = offloadShapeProblem(automation);
    if (problem) section.error(section.at, 'offload', problem);
  }
}

/** Whether a rule is of the shape a board's DirectSwitch can take over: one input edge → follow, inverted or toggle of one output. */
export function offloadShapeProblem({ trigger, actions, conditions }: AutomationConfig): string | undefined {
  const shape = 'firmware offload takes one DI and one output (or their aliases): when: {input: di/…} then: {output: do/… or ro/…, follow: true | inverted} or when: {input: di/…, edge: rising} then: {output: …, toggle: true}';
  if (conditions.length > 0) return `${shape}; conditions cannot be offloaded`;
  if (trigger.kind !== 'edge' || !namesTypeOrAlias(trigger.input, ['di']) || trigger.field !== 'value') return shape;
  const [action] = actions;
  if (actions.length !== 1 || action === undefined) return shape;
  if (action.kind !== 'follow' && action.kind !== 'toggle') return shape;
  if (action.outputs.length !== 1 || !namesTypeOrAlias(action.outputs[0]!, ['do', 'ro'])) return shape;
  if (action.kind === 'toggle' && trigger.edge !== 'rising') return `${shape} (a firmware toggle acts on the rising edge)`;
  return undefined;
}

/** `type/circuit` of one of `types` (EVOK's alternate names too), or an alias: its type is checked once resolved. */
function namesTypeOrAlias(name: string, types: readonly DeviceType[]): boolean {
  const slash = name.indexOf('/');
  if (slash < 0) return true;
  const type = canonicalType(name.slice(0, slash));
  return type !== undefined && types.includes(type);
}

/** A key holding one mapping or a list of them, as sections. */
function listOf(section: ConfigSection, key: string): ConfigSection[] {
  const node = section.value(key);
  if (node === undefined) return [];
  if (node.kind === 'map') return [new ConfigSection(node, section.keyPath(key), node.origin, section.findings)];
  return section.sectionList(key);
}

function reference(section: ConfigSection, key: string, what: string): string {
  const name = section.requiredString(key, what);
  if (name !== '' && !REFERENCE.test(name)) section.error(section.value(key)!.origin, key, `'${name}' is neither type/circuit (e.g. di/1_01) nor an alias`);
  return name;
}

function readTrigger(when: ConfigSection, location: LocationConfig): Trigger | undefined {
  const kinds = ['edge', 'press', 'above', 'below', 'counter_rises_by', 'at', 'quality'].filter((key) => when.has(key));
  if (kinds.includes('above') && kinds.includes('below')) kinds.splice(kinds.indexOf('below'), 1);
  if (kinds.length > 1) {
    when.error(when.at, undefined, `one trigger per automation: ${kinds.join(' and ')} cannot be combined (write two automations)`);
    when.ignoreAll();
    return undefined;
  }
  const kind = kinds[0];
  let trigger: Trigger | undefined;
  if (kind === 'at') trigger = readSchedule(when, location);
  else if (!when.has('input')) {
    when.missing('input', 'the point that triggers, e.g. di/1_01 (or at: "07:30" for a time of day)');
    when.ignoreAll();
    return undefined;
  } else {
    const input = reference(when, 'input', 'type/circuit or alias');
    const field = when.string('field', kind === 'counter_rises_by' ? 'counter' : 'value');
    switch (kind) {
      case undefined:
        trigger = { kind: 'edge', input, field, edge: 'level' };
        break;
      case 'edge':
        trigger = { kind: 'edge', input, field, edge: when.choice('edge', EDGES, 'rising') };
        break;
      case 'press': {
        const longS = when.number('long_s', DEFAULT_LONG_S, 0.05);
        const doubleS = when.number('double_s', DEFAULT_DOUBLE_S, 0.05);
        if (longS > 60) when.error(when.at, 'long_s', 'at most 60 s');
        if (doubleS > 5) when.error(when.at, 'double_s', 'at most 5 s');
        trigger = { kind: 'press', input, press: when.choice('press', PRESSES, 'short'), longS, doubleS };
        break;
      }
      case 'above':
      case 'below': {
        const above = when.has('above') ? when.number('above', 0, -Infinity) : undefined;
        const below = when.has('below') ? when.number('below', 0, -Infinity) : undefined;
        if (above !== undefined && below !== undefined) when.error(when.at, undefined, 'above and below together: write one automation for each limit');
        const hysteresis = when.number('hysteresis', 0, 0);
        const forS = when.number('for_s', 0, 0);
        if (forS > MAX_DELAY_S) when.error(when.at, 'for_s', `at most ${MAX_DELAY_S} s`);
        trigger = { kind: 'threshold', input, field, ...(above !== undefined ? { above } : {}), ...(below !== undefined ? { below } : {}), hysteresis, forS };
        break;
      }
      case 'counter_rises_by': {
        const risesBy = when.integer('counter_rises_by', 1, 1, 2 ** 31);
        if (!when.has('within_s')) when.missing('within_s', 'the window in seconds, e.g. 3600');
        const withinS = when.number('within_s', 60, 1);
        if (withinS > 7 * MAX_DELAY_S) when.error(when.at, 'within_s', `at most ${7 * MAX_DELAY_S} s (a week)`);
        trigger = { kind: 'counter', input, field, risesBy, withinS };
        break;
      }
      case 'quality':
        trigger = { kind: 'quality', input, quality: when.choice('quality', QUALITIES, 'offline') };
        break;
    }
  }
  when.warnUnknownKeys();
  return trigger;
}

function readSchedule(when: ConfigSection, location: LocationConfig): Trigger | undefined {
  const node = when.value('at')!;
  const text = node.kind === 'scalar' ? (node.text ?? '') : '';
  const offsetMin = when.number('offset_min', 0, -720);
  if (offsetMin > 720) when.error(when.at, 'offset_min', 'expected -720..720 minutes');
  const weekdays = readWeekdays(when, 'weekdays');
  let at: TimeOfDay | 'sunrise' | 'sunset' | undefined;
  if (text === 'sunrise' || text === 'sunset') {
    at = text;
    if (location.latitude === undefined || location.longitude === undefined) {
      when.error(node.origin, 'at', `${text} needs the controller's place: location: {latitude: 50.08, longitude: 14.42}`);
    }
  } else {
    at = timeOfDay(text);
    if (at === undefined) when.error(node.origin, 'at', `expected "HH:MM" (24-hour, e.g. "07:30"), sunrise or sunset, got '${text}'`);
    if (when.has('offset_min')) when.error(when.at, 'offset_min', 'an offset is for sunrise and sunset; write the time itself');
  }
  when.warnUnknownKeys();
  return at === undefined ? undefined : { kind: 'time', at, offsetMin, weekdays };
}

function timeOfDay(text: string): TimeOfDay | undefined {
  const match = /^([01]?\d|2[0-3]):([0-5]\d)$/.exec(text.trim());
  return match ? { hour: Number(match[1]), minute: Number(match[2]) } : undefined;
}

function readWeekdays(section: ConfigSection, key: string): number[] {
  if (!section.has(key)) return [...ALL_DAYS];
  const days = new Set<number>();
  for (const name of section.stringList(key, [])) {
    const word = name.toLowerCase();
    if (word === 'weekdays' || word === 'workdays') [1, 2, 3, 4, 5].forEach((day) => days.add(day));
    else if (word === 'weekend') [0, 6].forEach((day) => days.add(day));
    else {
      const day = DAY_NAMES.indexOf(word.slice(0, 3));
      if (day < 0) section.error(section.value(key)!.origin, key, `'${name}' is not a day (mon, tue, wed, thu, fri, sat, sun, weekdays, weekend)`);
      else days.add(day);
    }
  }
  return [...days].sort();
}

function readCondition(section: ConfigSection): Condition | undefined {
  let condition: Condition | undefined;
  if (section.has('time_after') || section.has('time_before')) {
    const after = timeOfDay(section.string('time_after', '00:00'));
    const before = timeOfDay(section.string('time_before', '00:00'));
    if (!after) section.error(section.at, 'time_after', 'expected "HH:MM"');
    if (!before) section.error(section.at, 'time_before', 'expected "HH:MM"');
    const weekdays = readWeekdays(section, 'weekdays');
    if (after && before) condition = { kind: 'time', after, before, weekdays };
  } else if (section.has('weekdays')) {
    condition = { kind: 'time', after: { hour: 0, minute: 0 }, before: { hour: 0, minute: 0 }, weekdays: readWeekdays(section, 'weekdays') };
  } else {
    const input = reference(section, 'input', 'the point to check, e.g. di/1_03');
    if (section.has('quality')) condition = { kind: 'quality', input, quality: section.choice('quality', QUALITIES, 'good') };
    else {
      const field = section.string('field', 'value');
      const isNode = section.value('is');
      let is: number | undefined;
      if (isNode !== undefined) is = onOff(section, 'is', isNode);
      const above = section.has('above') ? section.number('above', 0, -Infinity) : undefined;
      const below = section.has('below') ? section.number('below', 0, -Infinity) : undefined;
      if (is === undefined && above === undefined && below === undefined) {
        section.error(section.at, undefined, 'a condition needs is: on|off|<number>, above:, below:, quality: or time_after/time_before');
      }
      condition = { kind: 'state', input, field, ...(is !== undefined ? { is } : {}), ...(above !== undefined ? { above } : {}), ...(below !== undefined ? { below } : {}) };
    }
  }
  section.warnUnknownKeys();
  return condition;
}

/** on/off/true/false/1/0 or a number, as a value to write or compare. */
function onOff(section: ConfigSection, key: string, node: TreeNode): number | undefined {
  if (node.kind === 'scalar') {
    if (node.value === true || node.text === 'on' || node.text === 'ON' || node.text === 'On') return 1;
    if (node.value === false || node.text === 'off' || node.text === 'OFF' || node.text === 'Off') return 0;
    if (typeof node.value === 'number' && Number.isFinite(node.value)) return node.value;
  }
  section.mismatch(node, key, 'on, off or a number');
  return undefined;
}

function outputsOf(section: ConfigSection): string[] {
  if (section.has('output') && section.has('outputs')) {
    section.error(section.at, undefined, 'output and outputs together: list every output under outputs');
  }
  if (section.has('outputs')) {
    const outputs = section.stringList('outputs', []);
    if (outputs.length === 0) section.error(section.at, 'outputs', 'an empty list');
    if (outputs.length > MAX_SCENE) section.error(section.at, 'outputs', `at most ${MAX_SCENE} outputs in one step`);
    for (const name of outputs) if (!REFERENCE.test(name)) section.error(section.at, 'outputs', `'${name}' is neither type/circuit (e.g. do/1_01) nor an alias`);
    return outputs;
  }
  return [reference(section, 'output', 'the output to act on, e.g. do/1_01 (or outputs: [...] for a scene)')];
}

function readAction(section: ConfigSection): Action | undefined {
  const verbs = ['set', 'toggle', 'pulse_ms', 'on_for_s', 'follow', 'delay_s', 'enable', 'disable', 'cover'].filter((key) => section.has(key));
  if (verbs.length !== 1) {
    section.error(section.at, undefined, verbs.length === 0
      ? 'a step needs one of set, toggle, pulse_ms, on_for_s, follow (with output:), cover:, delay_s, enable or disable'
      : `one action per step: ${verbs.join(' and ')} (make a list of steps under then:)`);
    section.ignoreAll();
    return undefined;
  }
  const verb = verbs[0]!;
  let action: Action | undefined;
  switch (verb) {
    case 'delay_s': {
      const seconds = section.number('delay_s', 1, 0);
      if (seconds > MAX_DELAY_S) section.error(section.at, 'delay_s', `at most ${MAX_DELAY_S} s`);
      action = { kind: 'delay', seconds };
      break;
    }
    case 'enable':
    case 'disable':
      action = { kind: 'enable', automation: section.requiredString(verb, 'an automation id'), enabled: verb === 'enable' };
      break;
    case 'cover': {
      const cover = section.requiredString('cover', 'a cover name');
      if (section.has('command') === section.has('position')) section.error(section.at, undefined, 'a cover step takes command: open|close|stop or position: 0..100');
      const command = section.has('command') ? section.choice('command', ['open', 'close', 'stop'] as const, 'stop') : undefined;
      const position = section.has('position') ? section.number('position', 0, 0) : undefined;
      if (position !== undefined && position > 100) section.error(section.at, 'position', 'expected 0..100');
      action = { kind: 'cover', cover, ...(command ? { command } : {}), ...(position !== undefined ? { position } : {}) };
      break;
    }
    default: {
      const outputs = outputsOf(section);
      if (verb === 'set') {
        const value = onOff(section, 'set', section.value('set')!);
        if (value !== undefined) action = { kind: 'set', outputs, value };
      } else if (verb === 'toggle') {
        if (!section.boolean('toggle', true)) section.error(section.at, 'toggle', 'write toggle: true (or leave the step out)');
        action = { kind: 'toggle', outputs };
      } else if (verb === 'pulse_ms') {
        action = { kind: 'pulse', outputs, ms: section.integer('pulse_ms', 100, 1, MAX_ON_S * 1000) };
      } else if (verb === 'on_for_s') {
        const seconds = section.number('on_for_s', 1, 0.001);
        if (seconds > MAX_ON_S) section.error(section.at, 'on_for_s', `at most ${MAX_ON_S} s`);
        action = { kind: 'staircase', outputs, seconds };
      } else if (verb === 'follow') {
        const node = section.value('follow')!;
        const inverted = node.kind === 'scalar' && node.text === 'inverted';
        if (!inverted && !(node.kind === 'scalar' && node.value === true)) section.mismatch(node, 'follow', 'true or inverted');
        action = { kind: 'follow', outputs, inverted };
      }
    }
  }
  section.warnUnknownKeys();
  return action;
}

