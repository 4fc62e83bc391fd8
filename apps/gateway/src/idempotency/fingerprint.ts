import { createHash } from "node:crypto";

/**
 * Canonical JSON: object keys sorted, bigints and bytes in a fixed text form,
 * arrays in order. Two requests with equal canonical forms are the same request.
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return "null";
  if (typeof value === "bigint") return JSON.stringify(`${value}n`);
  if (value instanceof Uint8Array) return JSON.stringify(`b64:${Buffer.from(value).toString("base64")}`);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * The fingerprint of one request: HTTP method and path, and the first call it
 * makes to core (RPC name and request message). The message is what the
 * parameters mean after parsing and type coercion, so the JSON and form
 * versions of one request have the same fingerprint.
 */
export function requestFingerprint(httpMethod: string, httpPath: string, rpc: string, request: unknown): string {
  const path = httpPath.length > 1 ? httpPath.replace(/\/+$/, "") : httpPath;
  return createHash("sha256")
    .update(canonicalJson([httpMethod, path, rpc, request]))
    .digest("base64url");
}
