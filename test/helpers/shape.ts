import assert from 'node:assert/strict';
import type { Loose } from './http.js';

// Checks a device's JSON against EVOK's description: exactly these fields, in
// this order, each of one of the given JSON types.

export type JsonKind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null';

function kindOf(value: unknown): JsonKind {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value as JsonKind;
}

export function assertShape(value: Loose | undefined, shape: Readonly<Record<string, JsonKind | readonly JsonKind[]>>): void {
  assert.ok(value && typeof value === 'object', `expected an object, got ${JSON.stringify(value)}`);
  assert.deepEqual(Object.keys(value), Object.keys(shape), 'field names and order');
  for (const [field, kinds] of Object.entries(shape)) {
    const allowed: readonly JsonKind[] = typeof kinds === 'string' ? [kinds] : kinds;
    assert.ok(allowed.includes(kindOf(value[field])), `${field}: ${JSON.stringify(value[field])} is not ${allowed.join(' or ')}`);
  }
}
