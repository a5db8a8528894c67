// EVOK's autogen rule: autogen.yaml is read first and config.yaml is laid over
// it. Mappings merge key by key at every depth; any other value (scalar or
// list) from the upper file replaces the lower one whole.
import type { MapEntry, TreeNode } from './yaml-tree.js';

export function mergeOver(lower: TreeNode, upper: TreeNode): TreeNode {
  if (lower.kind !== 'map' || upper.kind !== 'map') return upper;
  const entries = new Map<string, MapEntry>(lower.entries);
  for (const [key, entry] of upper.entries) {
    const below = entries.get(key);
    entries.set(key, below ? { keyOrigin: entry.keyOrigin, node: mergeOver(below.node, entry.node) } : entry);
  }
  return { kind: 'map', entries, origin: upper.origin };
}
