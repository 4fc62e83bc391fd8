import { METADATA_LIMITS } from "@rms/proto";
import { errors } from "./errors.js";

/**
 * Metadata as every kind that carries it stores and checks it (CONTRACT.md section 3, in
 * ../shared/docs/): a list of `{k, v}` pairs, so any key is data and never a path or operator.
 */
export interface MetadataPair {
  k: string;
  v: string;
}

export const METADATA_MAX_KEYS = METADATA_LIMITS.keys;
export const METADATA_KEY_MAX = METADATA_LIMITS.keyLength;
export const METADATA_VALUE_MAX = METADATA_LIMITS.valueLength;

function validateKey(key: string, param: string): void {
  if (key.length === 0) throw errors.invalid("metadata_invalid", "Metadata keys must be at least 1 character long.", param);
  if (codePointLength(key) > METADATA_KEY_MAX) {
    throw errors.invalid(
      "metadata_invalid",
      `Metadata keys can be at most ${METADATA_KEY_MAX} characters long; '${key.slice(0, 50)}' is longer.`,
      `${param}[${key}]`,
    );
  }
  if (key.includes("[") || key.includes("]")) {
    throw errors.invalid("metadata_invalid", "Metadata keys may not contain '[' or ']'.", `${param}[${key}]`);
  }
}

function validateValue(key: string, value: string, param: string): void {
  if (codePointLength(value) > METADATA_VALUE_MAX) {
    throw errors.invalid("metadata_invalid", `Metadata values can be at most ${METADATA_VALUE_MAX} characters long (key '${key}').`, `${param}[${key}]`);
  }
}

function checkCount(pairs: readonly MetadataPair[], param: string): void {
  if (pairs.length > METADATA_MAX_KEYS) {
    throw errors.invalid("metadata_invalid", `Metadata can have at most ${METADATA_MAX_KEYS} keys; this request would leave ${pairs.length}.`, param);
  }
}

/**
 * Applies metadata changes to existing pairs: `clear` drops all first, then each
 * entry sets its key (in place when present, appended when new) or, with an
 * empty value, removes it. The result is validated as a whole (at most METADATA_MAX_KEYS keys).
 * An error names its param under `param`, where the metadata sits in the request
 * (`metadata[k]`, or `params[filter][metadata][k]` inside a job's params).
 */
export function mergeMetadata(
  existing: readonly MetadataPair[],
  changes: readonly { key: string; value: string }[],
  clear = false,
  param = "metadata",
): MetadataPair[] {
  const merged = new Map<string, string>(clear ? [] : existing.map((p) => [p.k, p.v]));
  for (const { key, value } of changes) {
    validateKey(key, param);
    if (value === "") {
      merged.delete(key);
    } else {
      validateValue(key, value, param);
      merged.set(key, value);
    }
  }
  const pairs = [...merged].map(([k, v]) => ({ k, v }));
  checkCount(pairs, param);
  return pairs;
}

/**
 * An update's metadata change, checked at once so a bad one fails before any read or write, as the
 * function that applies it to the current pairs; undefined when the update leaves metadata alone.
 */
export function metadataUpdate(
  changes: readonly { key: string; value: string }[],
  clear: boolean,
): ((current: readonly MetadataPair[]) => MetadataPair[]) | undefined {
  if (!clear && changes.length === 0) return undefined;
  mergeMetadata(
    [],
    changes.filter((e) => e.value !== ""),
  );
  return (current) => mergeMetadata(current, changes, clear);
}

/** True when two metadata lists hold the same pairs in the same order. */
export function sameMetadata(a: readonly MetadataPair[], b: readonly MetadataPair[]): boolean {
  return a.length === b.length && a.every((p, i) => p.k === b[i]?.k && p.v === b[i]?.v);
}

/** Length in Unicode code points (an emoji is one, as a user counts it). */
export function codePointLength(value: string): number {
  let length = 0;
  for (const _ of value) length++;
  return length;
}
