/**
 * Metadata as the public API shows it, from stored pairs or wire entries: a map with a null prototype,
 * so any key (`__proto__`, `a.b`, `$where`) is an own property serialized verbatim, in the order given.
 */
export function metadataMap(pairs: Iterable<readonly [key: string, value: string]>): Record<string, string> {
  const map = Object.create(null) as Record<string, string>;
  for (const [key, value] of pairs) map[key] = value;
  return map;
}
