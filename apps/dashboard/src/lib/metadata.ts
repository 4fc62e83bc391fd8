/** Metadata as the forms edit it: one `key=value` per line. */
export function metadataText(metadata: Record<string, string>): string {
  return Object.entries(metadata)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
}

/** The lines back to an object; a line without `=` is a key set to "" (which an update removes). */
export function parseMetadataText(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const at = line.indexOf("=");
    const key = (at === -1 ? line : line.slice(0, at)).trim();
    if (key === "") continue;
    out[key] = at === -1 ? "" : line.slice(at + 1);
  }
  return out;
}

/** An update's metadata: the new pairs, and every key that was there and is gone set to "" (removed). */
export function metadataChange(before: Record<string, string>, after: Record<string, string>): Record<string, string> {
  const change: Record<string, string> = { ...after };
  for (const key of Object.keys(before)) if (!(key in after)) change[key] = "";
  return change;
}
