import type { StoredEvent } from "./model.js";

/**
 * A recorded snapshot as the public API shows objects: `object` named after the event type's kind
 * (`resource.updated` -> `resource`) right after `id`, and metadata stored as `{k, v}` pairs (data
 * rule 6) turned back into a map with a null prototype, so any key is an own property (at any depth:
 * a job's params hold metadata too).
 */
function publicSnapshot(snapshot: Record<string, unknown>, kind: string | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if ("id" in snapshot) out["id"] = snapshot["id"];
  if (kind) out["object"] = kind;
  for (const [key, value] of Object.entries(snapshot)) {
    if (key === "id") continue;
    out[key] = publicValue(key, value);
  }
  return out;
}

/** Metadata pairs back to maps at any depth: a job's params hold metadata in filters, updates and items. */
function publicValue(key: string, value: unknown): unknown {
  if (key === "metadata" && Array.isArray(value)) return metadataMap(value as { k: string; v: string }[]);
  if (Array.isArray(value)) return value.map((item) => publicValue("", item));
  if (value !== null && typeof value === "object") {
    const out = Object.create(null) as Record<string, unknown>;
    for (const [k, v] of Object.entries(value)) out[k] = publicValue(k, v);
    return out;
  }
  return value;
}

function metadataMap(pairs: readonly { k: string; v: string }[]): Record<string, string> {
  const map = Object.create(null) as Record<string, string>;
  for (const { k, v } of pairs) map[k] = v;
  return map;
}

/** The event's `data` as the contract shows it: the object, and `previous_attributes` when the change had any. */
export function eventData(event: StoredEvent): { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> } {
  const kind = event.type.split(".")[0] ?? null;
  return {
    object: publicSnapshot(event.object, kind),
    ...(event.previous_attributes ? { previous_attributes: publicSnapshot(event.previous_attributes, null) } : {}),
  };
}
