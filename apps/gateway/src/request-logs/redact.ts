/**
 * What a request log may keep of a request's parameters and of its answer (CONTRACT.md section 12): every secret
 * replaced by "[redacted]" before anything is stored, and at most 8 KiB of JSON, a longer value cut with
 * `"truncated": true` beside what is kept.
 */

export const REDACTED = "[redacted]";
/** Bytes of JSON kept of a request's parameters, and of its answer. */
export const KEPT_BYTES = 8 * 1024;

/**
 * Key material wherever it appears in text: API keys of every kind and mode (`sk_`, `rk_`, `pk_`), webhook signing
 * secrets (`whsec_`) and private keys (`whsk_`). The public `whpk_` key is not a secret.
 */
const KEY_MATERIAL = /(?:(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]*|wh(?:sec|sk)_[0-9A-Za-z+/=_-]*)/g;
/** Fields whose value is a secret whatever it looks like (compared lower-case). */
const SECRET_FIELDS: ReadonlySet<string> = new Set(["secret", "secrets", "private_key", "authorization", "api_key_secret", "password"]);

/** KEY_MATERIAL without its global state, for a yes/no test. */
const HAS_KEY_MATERIAL = new RegExp(KEY_MATERIAL.source);
/**
 * A SECRET_FIELDS name as a JSON field name: `"name"` in any case. Unicode case folding (`u`) matches every spelling
 * that lowercases to a name (the Kelvin sign as `k`) and a few that do not: it may say yes in vain, never no in vain.
 */
const SECRET_FIELD_NAME = new RegExp(`"(?:${[...SECRET_FIELDS].join("|")})"`, "iu");

/**
 * Whether `redact` could change the value whose JSON text (as `JSON.stringify` writes it) is `text`: false when
 * the text holds no key material and no secret field's name, so the value can be kept as it is. Key material is
 * made of characters `JSON.stringify` never escapes, and a field's name is written in quotes, so the text shows
 * both wherever the value holds them.
 */
export function mayHoldSecret(text: string): boolean {
  return HAS_KEY_MATERIAL.test(text) || SECRET_FIELD_NAME.test(text);
}

/** Text with every piece of key material replaced. */
export function redactText(text: string): string {
  if (!text.includes("_")) return text; // every pattern has one: the common case costs one scan
  return text.replace(KEY_MATERIAL, REDACTED);
}

/** A JSON value (parsed) with every secret replaced: values of secret fields, key material in any string or field name. */
export function redact(value: unknown): unknown {
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map(redact);
  if (value !== null && typeof value === "object") {
    // Null-prototype: a client's `__proto__` is a field like any other, never the object's prototype.
    const out: Record<string, unknown> = Object.create(null);
    for (const [name, field] of Object.entries(value as Record<string, unknown>)) {
      const kept = redactText(name);
      out[kept] = SECRET_FIELDS.has(name.toLowerCase()) && field !== null && field !== "" ? REDACTED : redact(field);
    }
    return out;
  }
  return value;
}

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "null", "utf8");

/** Some text that fits `budget` bytes of JSON (quotes and escapes counted), cut by code points. */
function cutText(text: string, budget: number): string {
  const points = [...text];
  let low = 0;
  let high = points.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (bytesOf(points.slice(0, mid).join("")) <= budget) low = mid;
    else high = mid - 1;
  }
  return points.slice(0, low).join("");
}

/** Least room worth opening a nested value for; below it the value is left out. */
const MIN_ROOM = 32;

/** As much of `value` as fits `budget` bytes of JSON: leading fields and items kept whole, the first that does not fit cut. */
function cutValue(value: unknown, budget: number): unknown {
  if (typeof value === "string") return cutText(value, budget);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    let used = 2;
    for (const item of value) {
      const size = bytesOf(item) + 1;
      if (used + size <= budget) {
        out.push(item);
        used += size;
        continue;
      }
      if (budget - used - 1 >= MIN_ROOM && item !== null && typeof item === "object") out.push(cutValue(item, budget - used - 1));
      break;
    }
    return out;
  }
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = Object.create(null);
    let used = 2;
    for (const [name, field] of Object.entries(value as Record<string, unknown>)) {
      const head = bytesOf(name) + 2;
      const size = head + bytesOf(field);
      if (used + size <= budget) {
        out[name] = field;
        used += size;
        continue;
      }
      const room = budget - used - head;
      if (room >= MIN_ROOM && (typeof field === "string" || (field !== null && typeof field === "object"))) out[name] = cutValue(field, room);
      break;
    }
    return out;
  }
  return value;
}

/**
 * A JSON object kept whole when its text fits KEPT_BYTES, else cut to fit with `"truncated": true` as its
 * last field. A value that is not an object (an array, a string) is kept inside `{"value": ...}` the same way.
 */
export function keep(value: unknown, limit: number = KEPT_BYTES): Record<string, unknown> {
  const object = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
  if (bytesOf(object) <= limit) return object;
  const marker = bytesOf({ truncated: true }) - 1; // `{"truncated":true` plus the comma
  return { ...(cutValue(object, limit - marker) as Record<string, unknown>), truncated: true };
}
