// Coercion of written fields. Form bodies carry only strings and JSON bodies
// carry typed values; both go through the same rules so REST, JSON, bulk, RPC,
// WebSocket and MQTT accept exactly the same writes. A value that does not fit
// is rejected before anything is sent to the bus.

/**
 * A written value that does not fit. `kind` is the key of EVOK's error
 * envelope for the same mistake: `ValidationError` for what EVOK's schemas
 * refused (wrong JSON type, out of range, unknown field), `ValueError` for text
 * that Python's `int()` or `float()` could not read.
 */
export class ValidationError extends Error {
  constructor(
    message: string,
    readonly kind: 'ValidationError' | 'ValueError' | 'TypeError' | 'AttributeError' | 'Exception' = 'ValidationError',
  ) {
    super(message);
    this.name = kind;
  }
}

function notANumber(field: string, raw: string, as: 'int' | 'float'): ValidationError {
  // EVOK's messages, which name Python's conversion, prefixed with the field.
  const python = as === 'int' ? `invalid literal for int() with base 10: '${raw}'` : `could not convert string to float: '${raw}'`;
  return new ValidationError(`${field}: ${python}`, 'ValueError');
}

export type Coercer<T> = (raw: unknown, field: string) => T;

function show(raw: unknown): string {
  return typeof raw === 'string' ? `'${raw}'` : JSON.stringify(raw) ?? String(raw);
}

function numeric(raw: unknown): number | undefined {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'string' && raw.trim() !== '') {
    const value = Number(raw.trim());
    return Number.isNaN(value) ? undefined : value;
  }
  return undefined;
}

/** What Python's `int()` reads from text: digits with an optional sign, `_` between digits, spaces around. */
const PYTHON_INT = /^\s*[+-]?\d+(?:_\d+)*\s*$/;

/**
 * On/off as EVOK decides it: `int(x)`, then truthiness. So 2, "2", 1.5, 255,
 * -1 and true switch on; 0, "0", 0.5 and false switch off (flows that send
 * 255 or a scaled value keep working). Text must be a whole number as Python
 * reads it ("1.5" and "abc" are a ValueError); "true" and "false" are also
 * taken. Other JSON types are refused as EVOK's schema refused them.
 */
export const binary: Coercer<0 | 1> = (raw, field) => {
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw new ValidationError(`${field}: ${show(raw)} is not a number`, 'ValueError');
    return Math.trunc(raw) === 0 ? 0 : 1;
  }
  if (typeof raw === 'string') {
    if (raw === 'true') return 1;
    if (raw === 'false') return 0;
    if (!PYTHON_INT.test(raw)) throw notANumber(field, raw, 'int');
    return /[1-9]/.test(raw) ? 1 : 0;
  }
  throw new ValidationError(`${field}: ${show(raw)} is not of type 'boolean', 'string', 'number'`);
};

/** `numeric`, telling text Python could not read (ValueError) from values of the wrong type. */
function number(raw: unknown, field: string, as: 'int' | 'float'): number {
  const value = numeric(raw);
  if (value !== undefined) return value;
  if (typeof raw === 'string') throw notANumber(field, raw, as);
  throw new ValidationError(`${field}: ${show(raw)} is not of type 'number', 'string'`);
}

export function integer(min: number, max: number): Coercer<number> {
  return (raw, field) => {
    const value = number(raw, field, 'int');
    if (!Number.isInteger(value)) {
      if (typeof raw === 'string') throw notANumber(field, raw, 'int');
      throw new ValidationError(`${field}: ${show(raw)} is not an integer`);
    }
    if (value < min || value > max) throw new ValidationError(`${field}: ${value} is outside ${min}..${max}`);
    return value;
  };
}

/** A number that EVOK truncates (`int(float(x))`), e.g. debounce "12.7" → 12. */
export function truncated(min: number, max: number): Coercer<number> {
  return (raw, field) => {
    const value = number(raw, field, 'float');
    if (!Number.isFinite(value)) throw new ValidationError(`${field}: ${show(raw)} is not a number`);
    const whole = Math.trunc(value);
    if (whole < min || whole > max) throw new ValidationError(`${field}: ${value} is outside ${min}..${max}`);
    return whole;
  };
}

export function decimal(min: number, max: number, { exclusiveMin = false } = {}): Coercer<number> {
  return (raw, field) => {
    const value = number(raw, field, 'float');
    if (!Number.isFinite(value)) throw new ValidationError(`${field}: ${show(raw)} is not a number`);
    if (value < min || value > max || (exclusiveMin && value === min)) {
      throw new ValidationError(`${field}: ${value} is outside ${exclusiveMin ? '(' : ''}${min}..${max}`);
    }
    return value;
  };
}

export function oneOf(choices: readonly string[]): Coercer<string> {
  return (raw, field) => {
    if (typeof raw === 'string' && choices.includes(raw)) return raw;
    throw new ValidationError(`${field}: ${show(raw)} is not one of ${choices.join(', ')}`);
  };
}

/** Flags such as watchdog `reset`: "0" means no (EVOK treated the string "0" as yes). */
export const flag: Coercer<boolean> = (raw, field) => {
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false' || raw === '') return false;
  const value = numeric(raw);
  if (value !== undefined) return value !== 0;
  if (typeof raw === 'string') throw notANumber(field, raw, 'int');
  throw new ValidationError(`${field}: ${show(raw)} is not a flag (0, 1, true or false)`);
};

export type FieldSpec<P> = { readonly [K in keyof P]-?: Coercer<P[K]> };

/** How a type refuses a field it does not take, as EVOK refused it for that type. */
export type UnknownField = (field: string, writable: readonly string[]) => ValidationError;

/** EVOK's schemas (`additionalProperties: false`) refuse unknown fields with a ValidationError. */
export const schemaRefusal: UnknownField = (field, writable) =>
  new ValidationError(
    writable.length
      ? `'${field}' cannot be written here (writable: ${[...writable, 'alias'].join(', ')})`
      : `'${field}' cannot be written: this device is read-only`,
  );

/**
 * Types EVOK checked with no schema passed unknown fields on to Python's
 * `set()`, which refused them with a TypeError.
 */
export const keywordRefusal: UnknownField = (field, writable) =>
  new ValidationError(`set() got an unexpected keyword argument '${field}' (writable: ${[...writable, 'alias'].join(', ')})`, 'TypeError');

/** Coerce `raw` with `spec`; unknown fields are errors, as in EVOK's schemas. */
export function parseFields<P extends object>(spec: FieldSpec<P>, raw: Readonly<Record<string, unknown>>, unknown: UnknownField = schemaRefusal): Partial<P> {
  const parsed: Partial<P> = {};
  for (const [field, value] of Object.entries(raw)) {
    if (field === 'alias') continue;
    if (!Object.hasOwn(spec, field)) throw unknown(field, Object.keys(spec));
    const coerce = spec[field as keyof P];
    parsed[field as keyof P] = coerce(value, field);
  }
  return parsed;
}
