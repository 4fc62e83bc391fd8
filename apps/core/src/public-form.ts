import { metadataMap } from "@rms/proto";

/**
 * A recorded snapshot as the public API shows objects: `object` named after the object's kind (`resource`,
 * `job`) right after `id`, and metadata stored as `{k, v}` pairs (data rule 6) turned back into maps with a
 * null prototype, so any key is an own property (at any depth: a job's params hold metadata too). The one
 * rendering of a snapshot: events show their objects by it, and a kind whose API answer core renders (a
 * job) answers by it, so the two cannot differ.
 */
export function publicForm(snapshot: Record<string, unknown>, kind: string | null): Record<string, unknown> {
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
  if (key === "metadata" && Array.isArray(value)) return metadataMap((value as { k: string; v: string }[]).map((p) => [p.k, p.v]));
  if (Array.isArray(value)) return value.map((item) => publicValue("", item));
  if (value !== null && typeof value === "object") {
    const out = Object.create(null) as Record<string, unknown>;
    for (const [k, v] of Object.entries(value)) out[k] = publicValue(k, v);
    return out;
  }
  return value;
}
