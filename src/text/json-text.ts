// JSON text with EVOK's number types. Python writes a float that happens to be
// whole as `5.0` and an int as `5`; clients written in Python (and some that
// compare types) tell them apart, while JavaScript's JSON.stringify writes
// both as `5`. Devices name the fields that are floats in EVOK, and their JSON
// text is built here; other replies embed that text as it is (RawJson).

/** JSON text to be placed into a reply unchanged. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** A number as Python writes a float: whole numbers get `.0`; non-finite ones are null. */
export function floatText(value: unknown): string {
  if (typeof value !== 'number') return JSON.stringify(value) ?? 'null';
  if (!Number.isFinite(value)) return 'null';
  if (Object.is(value, -0)) return '-0.0';
  const text = String(value);
  return Number.isInteger(value) && !text.includes('e') ? `${text}.0` : text;
}

/** An object's JSON text, with the fields `isFloat` names written as floats. */
export function objectJson(state: Readonly<Record<string, unknown>>, isFloat: (field: string, value: unknown) => boolean): string {
  let text = '';
  for (const key in state) {
    const value = state[key];
    if (value === undefined || typeof value === 'function') continue;
    text += `${text ? ',' : '{'}${JSON.stringify(key)}:${isFloat(key, value) ? floatText(value) : JSON.stringify(value)}`;
  }
  return text ? `${text}}` : '{}';
}

/** JSON.stringify that places RawJson texts as they are. For reply envelopes; values are plain data. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined || typeof item === 'function' ? 'null' : jsonText(item))).join(',')}]`;
  if (value !== null && typeof value === 'object' && !('toJSON' in value)) {
    const parts: string[] = [];
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined && typeof item !== 'function') parts.push(`${JSON.stringify(key)}:${jsonText(item)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
