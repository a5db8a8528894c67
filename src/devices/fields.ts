// Coercion of written fields. Form bodies carry only strings and JSON bodies
// carry typed values; both go through the same rules so REST, JSON, bulk, RPC,
// WebSocket and MQTT accept exactly the same writes. A value that does not fit
// is rejected before anything is sent to the bus.

export class ValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ValidationError';
  }
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

/** 0/1 for binary outputs: 0, 1, true, false and their string forms. */
export const binary: Coercer<0 | 1> = (raw, field) => {
  if (raw === true || raw === 1 || raw === '1' || raw === 'true') return 1;
  if (raw === false || raw === 0 || raw === '0' || raw === 'false') return 0;
  throw new ValidationError(`${field}: ${show(raw)} is not a binary value (0, 1, true or false)`);
};

export function integer(min: number, max: number): Coercer<number> {
  return (raw, field) => {
    const value = numeric(raw);
    if (value === undefined || !Number.isInteger(value)) {
      throw new ValidationError(`${field}: ${show(raw)} is not an integer`);
    }
    if (value < min || value > max) throw new ValidationError(`${field}: ${value} is outside ${min}..${max}`);
    return value;
  };
}

/** A number that EVOK truncates (`int(float(x))`), e.g. debounce "12.7" → 12. */
export function truncated(min: number, max: number): Coercer<number> {
  return (raw, field) => {
    const value = numeric(raw);
    if (value === undefined || !Number.isFinite(value)) throw new ValidationError(`${field}: ${show(raw)} is not a number`);
    const whole = Math.trunc(value);
    if (whole < min || whole > max) throw new ValidationError(`${field}: ${value} is outside ${min}..${max}`);
    return whole;
  };
}

export function decimal(min: number, max: number, { exclusiveMin = false } = {}): Coercer<number> {
  return (raw, field) => {
    const value = numeric(raw);
    if (value === undefined || !Number.isFinite(value)) throw new ValidationError(`${field}: ${show(raw)} is not a number`);
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
  if (value === undefined) throw new ValidationError(`${field}: ${show(raw)} is not a flag (0, 1, true or false)`);
  return value !== 0;
};

export type FieldSpec<P> = { readonly [K in keyof P]-?: Coercer<P[K]> };

/** Coerce `raw` with `spec`; unknown fields are errors, as in EVOK's schemas. */
export function parseFields<P extends object>(spec: FieldSpec<P>, raw: Readonly<Record<string, unknown>>): Partial<P> {
  const parsed: Partial<P> = {};
  for (const [field, value] of Object.entries(raw)) {
    if (field === 'alias') continue;
    if (!Object.hasOwn(spec, field)) {
      const allowed = Object.keys(spec);
      throw new ValidationError(
        allowed.length
          ? `'${field}' cannot be written here (writable: ${[...allowed, 'alias'].join(', ')})`
          : `'${field}' cannot be written: this device is read-only`,
      );
    }
    const coerce = spec[field as keyof P];
    parsed[field as keyof P] = coerce(value, field);
  }
  return parsed;
}
