// A checker for the part of JSON Schema that iogate's OpenAPI document uses
// (type, const, enum, properties, required, additionalProperties, items,
// anyOf, oneOf, $ref, min/max items and properties, pattern), so npm test can
// hold replies against the document with Node alone. CI also validates all
// peer-suite traffic with Prism, a full OpenAPI validator.

type Schema = Record<string, any>;

export function schemaProblems(document: Schema, schema: Schema, value: unknown, path = '$'): string[] {
  if (schema['$ref']) {
    const target = String(schema['$ref']).replace(/^#\//, '').split('/').reduce((node: any, key) => node?.[key], document);
    if (!target) return [`${path}: unresolved ${schema['$ref']}`];
    return schemaProblems(document, target, value, path);
  }
  const problems: string[] = [];
  if (schema['anyOf'] && !schema['anyOf'].some((option: Schema) => schemaProblems(document, option, value, path).length === 0)) {
    problems.push(`${path}: matches none of anyOf (${JSON.stringify(value)?.slice(0, 200)})`);
  }
  if (schema['oneOf'] && schema['oneOf'].filter((option: Schema) => schemaProblems(document, option, value, path).length === 0).length !== 1) {
    problems.push(`${path}: does not match exactly one of oneOf`);
  }
  if ('const' in schema && value !== schema['const']) problems.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(schema['const'])}`);
  if (schema['enum'] && !schema['enum'].includes(value)) problems.push(`${path}: ${JSON.stringify(value)} not in ${JSON.stringify(schema['enum'])}`);
  if (schema['type']) {
    const types: string[] = Array.isArray(schema['type']) ? schema['type'] : [schema['type']];
    if (!types.some((type) => isType(value, type))) {
      problems.push(`${path}: ${JSON.stringify(value)?.slice(0, 80)} is not ${types.join(' or ')}`);
      return problems;
    }
  }
  if (typeof value === 'string' && schema['pattern'] && !new RegExp(schema['pattern']).test(value)) problems.push(`${path}: '${value}' does not match ${schema['pattern']}`);
  if (Array.isArray(value)) {
    if (schema['minItems'] !== undefined && value.length < schema['minItems']) problems.push(`${path}: fewer than ${schema['minItems']} items`);
    if (schema['maxItems'] !== undefined && value.length > schema['maxItems']) problems.push(`${path}: more than ${schema['maxItems']} items`);
    if (schema['items']) value.forEach((item, i) => problems.push(...schemaProblems(document, schema['items'], item, `${path}[${i}]`)));
  } else if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object);
    if (schema['minProperties'] !== undefined && keys.length < schema['minProperties']) problems.push(`${path}: fewer than ${schema['minProperties']} properties`);
    if (schema['maxProperties'] !== undefined && keys.length > schema['maxProperties']) problems.push(`${path}: more than ${schema['maxProperties']} properties`);
    for (const key of schema['required'] ?? []) if (!(key in object)) problems.push(`${path}: '${key}' missing`);
    const properties: Schema = schema['properties'] ?? {};
    for (const key of keys) {
      if (key in properties) problems.push(...schemaProblems(document, properties[key], object[key], `${path}.${key}`));
      else if (schema['additionalProperties'] === false) problems.push(`${path}: '${key}' is not allowed`);
      else if (typeof schema['additionalProperties'] === 'object') problems.push(...schemaProblems(document, schema['additionalProperties'], object[key], `${path}.${key}`));
    }
  }
  return problems;
}

function isType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}
