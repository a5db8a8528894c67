// Reads user hardware-definition files written in EVOK 3's YAML format, so a
// directory of definitions that works with EVOK works here unchanged. Keys keep
// EVOK's spelling; keys EVOK 3 ignores (v2 leftovers such as board_index,
// major_group, min_v, cal_reg) are ignored here too. Unlike EVOK, every problem
// is reported up front with file, line and key path instead of surfacing later
// as a half-registered board.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isNode, LineCounter, parseDocument, type Document } from 'yaml';
import type {
  AnalogMode,
  BoardModel,
  DataPointFeature,
  DoFeature,
  Feature,
  FeatureType,
  RegisterBlock,
  RegisterSpace,
} from './model.js';

export class HwDefinitionError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly keyPath: string,
    readonly detail: string,
  ) {
    const where = line === undefined ? file : `${file}:${line}`;
    super(keyPath ? `${where}: ${keyPath}: ${detail}` : `${where}: ${detail}`);
    this.name = 'HwDefinitionError';
  }
}

export interface ParsedHwDefinition {
  model: BoardModel;
  warnings: string[];
}

export function parseHwDefinition(name: string, text: string, file?: string): ParsedHwDefinition {
  const parsed = parseUnlessEmpty(name, text, file ?? `${name}.yaml`);
  if (!parsed) throw new HwDefinitionError(file ?? `${name}.yaml`, undefined, '', 'the file is empty');
  return parsed;
}

/**
 * Loads every `*.yaml` directly inside `dir` (not recursive), named by file name
 * without the extension, as EVOK does. Empty files are skipped. A directory that
 * does not exist simply contributes no models: user definitions are optional.
 */
export function loadHwDefinitionDir(dir: string): { models: Map<string, BoardModel>; warnings: string[] } {
  const models = new Map<string, BoardModel>();
  const warnings: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { models, warnings };
    throw err;
  }
  for (const entry of entries.filter((e) => e.endsWith('.yaml')).sort()) {
    const file = join(dir, entry);
    if (!statSync(file).isFile()) continue;
    const name = entry.slice(0, -'.yaml'.length);
    const parsed = parseUnlessEmpty(name, readFileSync(file, 'utf8'), file);
    if (!parsed) continue;
    models.set(name, parsed.model);
    warnings.push(...parsed.warnings);
  }
  return { models, warnings };
}

function parseUnlessEmpty(name: string, text: string, file: string): ParsedHwDefinition | undefined {
  const lines = new LineCounter();
  // EVOK reads these files with PyYAML, a YAML 1.1 parser; parse the same dialect.
  const doc = parseDocument(text, { lineCounter: lines, version: '1.1' });
  const syntaxError = doc.errors[0];
  if (syntaxError) {
    const line = syntaxError.linePos?.[0].line;
    throw new HwDefinitionError(file, line, '', `invalid YAML: ${syntaxError.message.split('\n')[0]}`);
  }
  if (doc.contents === null) return undefined;
  const source = new Source(file, doc, lines);
  const top = source.root();
  const blocks = top.list('modbus_register_blocks', true).map(readBlock);
  const features = top
    .list('modbus_features', false)
    .map(readFeature)
    .filter((f): f is Feature => f !== undefined);
  return { model: { name, blocks, features }, warnings: source.warnings };
}

type KeyPath = ReadonlyArray<string | number>;

function formatPath(path: KeyPath): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

function describeValue(value: unknown): string {
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return JSON.stringify(value);
}

/** The parsed document plus what is needed to point at a line in it. */
class Source {
  readonly warnings: string[] = [];
  private readonly values: unknown;

  constructor(
    private readonly file: string,
    private readonly doc: Document,
    private readonly lines: LineCounter,
  ) {
    this.values = doc.toJS();
  }

  root(): Fields {
    if (!isPlainMapping(this.values)) this.fail([], `expected a mapping at the top level, got ${describeValue(this.values)}`);
    return new Fields(this, this.values, [], 'the definition');
  }

  fail(path: KeyPath, detail: string): never {
    throw new HwDefinitionError(this.file, this.lineOf(path), formatPath(path), detail);
  }

  warn(path: KeyPath, detail: string): void {
    const line = this.lineOf(path);
    const where = line === undefined ? this.file : `${this.file}:${line}`;
    this.warnings.push(`${where}: ${formatPath(path)}: ${detail}`);
  }

  /** Line of the node at `path`, or of its nearest existing ancestor (for missing keys). */
  private lineOf(path: KeyPath): number | undefined {
    for (let p = path; ; p = p.slice(0, -1)) {
      const node = p.length === 0 ? this.doc.contents : this.doc.getIn(p, true);
      if (isNode(node) && node.range) return this.lines.linePos(node.range[0]).line;
      if (p.length === 0) return undefined;
    }
  }
}

function isPlainMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How one kind of scalar value is checked, and how to say what was expected. */
interface Kind<T> {
  expected: string;
  accept(value: unknown): value is T;
}

const MAX_ADDRESS = 0xffff;
/** One FC3/FC4 request carries at most 125 registers, and EVOK reads a block in one request. */
const MAX_BLOCK_COUNT = 125;

const address: Kind<number> = {
  expected: 'a register or coil address, an integer 0–65535',
  accept: (v): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_ADDRESS,
};
const positiveInt: Kind<number> = {
  expected: 'a positive integer',
  accept: (v): v is number => Number.isInteger(v) && (v as number) >= 1,
};
const nonNegativeInt: Kind<number> = {
  expected: 'an integer ≥ 0',
  accept: (v): v is number => Number.isInteger(v) && (v as number) >= 0,
};
const finiteNumber: Kind<number> = {
  expected: 'a number',
  accept: (v): v is number => typeof v === 'number' && Number.isFinite(v),
};
const text: Kind<string> = {
  expected: 'a string',
  accept: (v): v is string => typeof v === 'string',
};
const nameList: Kind<string[]> = {
  expected: 'a list of mode names',
  accept: (v): v is string[] => Array.isArray(v) && v.every((item) => typeof item === 'string'),
};
const numberPair: Kind<[number, number]> = {
  expected: 'a list of two numbers [low, high]',
  accept: (v): v is [number, number] => Array.isArray(v) && v.length === 2 && v.every((n) => finiteNumber.accept(n)),
};

function oneOf<T extends string>(...choices: T[]): Kind<T> {
  return {
    expected: `one of ${choices.join(', ')}`,
    accept: (v): v is T => choices.includes(v as T),
  };
}

const registerSpace = oneOf<RegisterSpace>('holding', 'input');

/** The keys of one YAML mapping, read with error reporting bound to its path. */
class Fields {
  constructor(
    private readonly source: Source,
    private readonly values: Record<string, unknown>,
    readonly path: KeyPath,
    /** Names the mapping in "required by" messages, e.g. "a DI feature". */
    private readonly owner: string,
  ) {}

  has(key: string): boolean {
    return this.values[key] !== undefined;
  }

  keys(): string[] {
    return Object.keys(this.values);
  }

  required<T>(key: string, kind: Kind<T>): T {
    if (!this.has(key)) this.fail(key, `missing; ${this.owner} needs it (${kind.expected})`);
    return this.check(key, kind);
  }

  optional<T>(key: string, kind: Kind<T>): T | undefined {
    return this.has(key) ? this.check(key, kind) : undefined;
  }

  /** EVOK's feature `count`: optional, 1 when absent. */
  count(): number {
    return this.optional('count', positiveInt) ?? 1;
  }

  /** A list of mappings; an empty key (`modbus_features:` with nothing below) is an empty list. */
  list(key: string, mandatory: boolean): Fields[] {
    const value = this.values[key];
    if (value === undefined && mandatory) this.fail(key, `missing; ${this.owner} needs it (a list of mappings)`);
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) this.fail(key, `expected a list of mappings, got ${describeValue(value)}`);
    return value.map((item, i) => {
      const path = [...this.path, key, i];
      if (!isPlainMapping(item)) this.source.fail(path, `expected a mapping, got ${describeValue(item)}`);
      return new Fields(this.source, item, path, `an entry of ${key}`);
    });
  }

  /** A nested mapping; `null` (a key with nothing below it) reads as an empty mapping. */
  requiredMapping(key: string, expected: string, owner: string): Fields {
    if (!this.has(key)) this.fail(key, `missing; ${this.owner} needs it (${expected})`);
    return this.nested(key, expected, owner);
  }

  optionalMapping(key: string, expected: string, owner: string): Fields | undefined {
    return this.has(key) ? this.nested(key, expected, owner) : undefined;
  }

  withOwner(owner: string): Fields {
    return new Fields(this.source, this.values, this.path, owner);
  }

  fail(key: string, detail: string): never {
    return this.source.fail([...this.path, key], detail);
  }

  warn(detail: string): void {
    this.source.warn(this.path, detail);
  }

  private nested(key: string, expected: string, owner: string): Fields {
    const value = this.values[key];
    if (value !== null && !isPlainMapping(value)) this.fail(key, `expected ${expected}, got ${describeValue(value)}`);
    return new Fields(this.source, value ?? {}, [...this.path, key], owner);
  }

  private check<T>(key: string, kind: Kind<T>): T {
    const value = this.values[key];
    if (!kind.accept(value)) this.fail(key, `expected ${kind.expected}, got ${describeValue(value)}`);
    return value;
  }
}

/** Drops keys whose value is undefined, so absent optional keys stay absent. */
function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

function readBlock(f: Fields): RegisterBlock {
  const block = f.withOwner('a register block');
  const start_reg = block.required('start_reg', address);
  const count = block.required('count', positiveInt);
  if (count > MAX_BLOCK_COUNT) {
    block.fail('count', `expected at most ${MAX_BLOCK_COUNT} registers (one Modbus read request), got ${count}`);
  }
  if (start_reg + count - 1 > MAX_ADDRESS) {
    block.fail('count', `the block runs past register ${MAX_ADDRESS} (start_reg ${start_reg} + count ${count})`);
  }
  return {
    start_reg,
    count,
    frequency: block.required('frequency', positiveInt),
    type: block.optional('type', registerSpace) ?? 'holding',
  };
}

/** Feature types EVOK 2 knew; EVOK 3 skips them, and so do we, with a hint. */
const RETIRED_FEATURE_HINTS: Record<string, string> = {
  UNIT_REGISTER: 'EVOK 3 renamed it DATA_POINT',
  UART: 'serial-port settings are not served by EVOK 3',
  AI18: 'EVOK 3 has no AI18 support',
  EXT_CONFIG: 'EVOK 3 has no EXT_CONFIG support',
};

function readFeature(f: Fields): Feature | undefined {
  const type = f.withOwner('every feature').required('type', text);
  if (!isFeatureType(type)) {
    const hint = RETIRED_FEATURE_HINTS[type];
    f.warn(`unknown feature type ${type}, ignored${hint ? ` (${hint})` : ''}`);
    return undefined;
  }
  return FEATURE_READERS[type](f.withOwner(`a ${type} feature`));
}

function isFeatureType(type: string): type is FeatureType {
  return Object.hasOwn(FEATURE_READERS, type);
}

/** The feature interface whose `type` admits T (OWPOWER and NV_SAVE share one interface). */
type FeatureOf<T extends FeatureType> = Feature extends infer F ? (F extends { type: infer U } ? (T extends U ? F : never) : never) : never;
type FeatureReaders = { [T in FeatureType]: (f: Fields) => FeatureOf<T> };

const FEATURE_READERS: FeatureReaders = {
  DI: (f) =>
    compact({
      type: 'DI',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      counter_reg: f.required('counter_reg', address),
      deboun_reg: f.required('deboun_reg', address),
      modes: f.required('modes', nameList),
      start_index: f.optional('start_index', nonNegativeInt),
      ds_modes: f.optional('ds_modes', nameList),
      direct_reg: f.optional('direct_reg', address),
      polar_reg: f.optional('polar_reg', address),
      toggle_reg: f.optional('toggle_reg', address),
    }),
  RO: (f) =>
    compact({
      type: 'RO',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      val_coil: f.required('val_coil', address),
      start_index: f.optional('start_index', nonNegativeInt),
    }),
  DO: readDigitalOutput,
  LED: (f) =>
    compact({
      type: 'LED',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      val_coil: f.required('val_coil', address),
      start_index: f.optional('start_index', nonNegativeInt),
    }),
  WD: (f) =>
    compact({
      type: 'WD',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      timeout_reg: f.required('timeout_reg', address),
      nv_sav_coil: f.required('nv_sav_coil', address),
      reset_coil: f.required('reset_coil', address),
      start_index: f.optional('start_index', nonNegativeInt),
    }),
  AO: (f) =>
    compact({
      type: 'AO',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      modes: readAnalogModes(f),
      mode_reg: f.optional('mode_reg', address),
      start_index: f.optional('start_index', nonNegativeInt),
    }),
  BAO: (f) =>
    compact({
      type: 'BAO',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      res_val_reg: f.required('res_val_reg', address),
      mode_reg: f.optional('mode_reg', address),
      start_index: f.optional('start_index', nonNegativeInt),
    }),
  AI: (f) =>
    compact({
      type: 'AI',
      count: f.count(),
      val_reg: f.required('val_reg', address),
      modes: readAnalogModes(f),
      mode_reg: f.optional('mode_reg', address),
      start_index: f.optional('start_index', nonNegativeInt),
    }),
  REGISTER: (f) =>
    compact({
      type: 'REGISTER',
      count: f.count(),
      start_reg: f.required('start_reg', address),
      reg_type: f.optional('reg_type', registerSpace),
    }),
  DATA_POINT: readDataPoint,
  OWPOWER: (f) => ({ type: 'OWPOWER', val_coil: f.required('val_coil', address) }),
  NV_SAVE: (f) => ({ type: 'NV_SAVE', val_coil: f.required('val_coil', address) }),
};

/** EVOK refuses a DO without a complete set of PWM timer registers; so do we. */
function readDigitalOutput(f: Fields): DoFeature {
  const common = {
    type: 'DO' as const,
    count: f.count(),
    val_reg: f.required('val_reg', address),
    val_coil: f.required('val_coil', address),
    pwm_reg: f.required('pwm_reg', address),
    modes: f.required('modes', nameList),
    start_index: f.optional('start_index', nonNegativeInt),
  };
  if (f.has('pwm_ps_reg') || f.has('pwm_c_reg')) {
    return compact({
      ...common,
      pwm_ps_reg: f.required('pwm_ps_reg', address),
      pwm_c_reg: f.required('pwm_c_reg', address),
    });
  }
  if (f.has('pwm_preset_reg') || f.has('pwm_cpres_reg')) {
    return compact({
      ...common,
      pwm_preset_reg: f.required('pwm_preset_reg', address),
      pwm_cpres_reg: f.required('pwm_cpres_reg', address),
    });
  }
  return f.fail(
    'pwm_ps_reg',
    'missing; a DO feature needs either pwm_ps_reg + pwm_c_reg (hardware PWM timer) or pwm_preset_reg + pwm_cpres_reg (software PWM timer)',
  );
}

const DATA_POINT_TYPES = oneOf<NonNullable<DataPointFeature['datatype']>>('signed16', 'unsigned16', 'float32');

function readDataPoint(f: Fields): DataPointFeature {
  return compact({
    type: 'DATA_POINT',
    count: f.count(),
    value_reg: f.required('value_reg', address),
    name: f.optional('name', text),
    unit: f.optional('unit', text),
    datatype: f.optional('datatype', DATA_POINT_TYPES),
    factor: f.optional('factor', finiteNumber),
    offset: f.optional('offset', finiteNumber),
    valid_mask_reg: f.optional('valid_mask_reg', address),
    reg_type: f.optional('reg_type', registerSpace),
  });
}

const TRANSFORMATION_TYPES = oneOf('float32', 'int32', 'uint32');
const BYTE_ORDER = oneOf('big', 'little');

/** AI/AO modes in the v3 shape `{Name: {value?, unit?, range?, transformation?}}`. */
function readAnalogModes(f: Fields): Record<string, AnalogMode> {
  const modes = f.requiredMapping('modes', 'a mapping of mode name to {value, unit, range}', 'modes');
  const result: Record<string, AnalogMode> = {};
  for (const name of modes.keys()) {
    const mode = modes.requiredMapping(name, 'a mapping with optional value, unit, range, transformation', `mode ${name}`);
    const transformation = mode.optionalMapping(
      'transformation',
      'a mapping of datatype, byteorder, wordorder, decimals, ratio',
      `the transformation of mode ${name}`,
    );
    result[name] = compact({
      value: mode.optional('value', nonNegativeInt),
      unit: mode.optional('unit', text),
      range: mode.optional('range', numberPair),
      transformation:
        transformation &&
        compact({
          datatype: transformation.optional('datatype', TRANSFORMATION_TYPES),
          byteorder: transformation.optional('byteorder', BYTE_ORDER),
          wordorder: transformation.optional('wordorder', BYTE_ORDER),
          decimals: transformation.optional('decimals', nonNegativeInt),
          ratio: transformation.optional('ratio', finiteNumber),
        }),
    });
  }
  return result;
}
