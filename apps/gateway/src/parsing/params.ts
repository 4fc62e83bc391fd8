import { ApiError, type ErrorCode } from "../errors.js";
import type { Params } from "./body.js";

/**
 * Type checks of request parameters. Form values are always strings, so every
 * reader accepts the string form; JSON callers may also send real numbers and
 * booleans where a field is numeric or boolean. Domain limits (lengths, counts)
 * are left to core.
 */

/** Refuses any parameter not in `allowed`, naming the first one. */
export function rejectUnknown(params: Params, allowed: readonly string[]): void {
  const unknown = Object.keys(params).find((key) => !allowed.includes(key));
  if (unknown !== undefined) {
    throw new ApiError("parameter_unknown", `Received unknown parameter: ${unknown.slice(0, 100)}`, { param: unknown });
  }
}

/**
 * Runs the checks of a nested object, naming its params (and the messages that mention them) under `prefix`:
 * `name` -> `params[items][3][name]`, `metadata[k]` -> `params[filter][metadata][k]`.
 */
export function under<T>(prefix: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof ApiError) || error.param === undefined) throw error;
    const at = error.param.indexOf("[");
    const param = at === -1 ? `${prefix}[${error.param}]` : `${prefix}[${error.param.slice(0, at)}]${error.param.slice(at)}`;
    const message = error.message.split(error.param).join(param);
    throw new ApiError(error.code, message, { param });
  }
}

/** What a value is, for error messages ("an array", "a number"). */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** Largest index accepted in the indexed list form; core refuses lists longer than its limits anyway. */
const LIST_INDEX = /^(0|[1-9]\d{0,5})$/;

/**
 * A list as callers send one: a JSON array, `name[]=a&name[]=b`, or the indexed form `name[0]=a` (which the
 * form decoder keeps as an object with keys "0", "1", ...; its indexes must run from 0 without gaps).
 * Undefined when the value is not list-shaped, so the caller words that refusal.
 */
export function listValue(value: unknown, param: string): unknown[] | undefined {
  if (Array.isArray(value)) return value;
  if (value === null || typeof value !== "object") return undefined;
  const keys = Object.keys(value);
  if (!keys.every((key) => LIST_INDEX.test(key))) return undefined;
  const items: unknown[] = [];
  for (const key of keys) items[Number(key)] = (value as Params)[key];
  if (items.length !== keys.length) throw new ApiError("parameter_invalid", `Invalid ${param}: indexes must run from 0 without gaps.`, { param });
  return items;
}

/** A list of strings (`noun` names them in the refusal); undefined when absent. */
export function optionalStringList(params: Params, name: string, noun: string): string[] | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  const items = listValue(value, name);
  if (!items?.every((item): item is string => typeof item === "string")) {
    throw new ApiError("parameter_invalid", `Invalid ${name}: must be a list of ${noun}.`, { param: name });
  }
  return items;
}

export function optionalString(params: Params, name: string): string | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new ApiError("parameter_invalid", `Invalid ${name}: must be a string, got ${describe(value)}.`, { param: name });
  return value;
}

export function requiredString(params: Params, name: string): string {
  const value = optionalString(params, name);
  if (value === undefined) throw new ApiError("parameter_missing", `Missing required param: ${name}.`, { param: name });
  return value;
}

/** The refusal of an empty string where a value cannot be unset (Stripe's words). */
export function emptyValue(name: string): ApiError {
  return new ApiError(
    "parameter_invalid_empty",
    `You passed an empty string for '${name}'. We assume empty values are an attempt to unset a parameter; however '${name}' cannot be unset.`,
    { param: name },
  );
}

/** A required string that cannot be empty: absent is `parameter_missing`, `""` is `parameter_invalid_empty`. */
export function requiredNonEmptyString(params: Params, name: string): string {
  const value = requiredString(params, name);
  if (value === "") throw emptyValue(name);
  return value;
}

/**
 * The one rule of every list and filter in a query string (CONTRACT.md section 3's `status=`, applied to all): a
 * parameter given with an empty value, at any depth (`status=`, `created[gte]=`, `status[]=`, `metadata[plan]=`),
 * is an attempt to unset a filter, which a filter cannot be: 400 `parameter_invalid_empty` naming it, never an
 * unfiltered answer.
 */
export function rejectEmptyValues(params: Params, prefix = ""): void {
  for (const key of Object.keys(params)) {
    const name = prefix === "" ? key : `${prefix}[${key}]`;
    const value = params[key];
    if (value === "") throw emptyValue(name);
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        if (item === "") throw emptyValue(`${name}[${i}]`);
        if (item !== null && typeof item === "object") rejectEmptyValues(item as Params, `${name}[${i}]`);
      });
    } else if (value !== null && typeof value === "object") rejectEmptyValues(value as Params, name);
  }
}

/** One of `values`; an empty string is "unset", which an enum field cannot be. */
export function optionalEnum<T extends string>(params: Params, name: string, values: readonly T[]): T | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (value === "") throw emptyValue(name);
  if (typeof value !== "string" || !(values as readonly string[]).includes(value)) {
    throw new ApiError("parameter_invalid", `Invalid ${name}: must be one of ${values.join(", ")}.`, { param: name });
  }
  return value as T;
}

/** `true` or `false`, as a JSON boolean or its text (a form's `"true"`); undefined when absent. */
export function optionalBoolean(params: Params, name: string): boolean | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw new ApiError("parameter_invalid", `Invalid ${name}: must be true or false.`, { param: name });
}

/** A JSON number, or the decimal text of an integer, as a number; NaN for anything else (which every range refuses). */
export function numberOf(value: unknown): number {
  return typeof value === "number" ? value : typeof value === "string" && /^[+-]?\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
}

/** An integer from `min` to `max`, as a JSON number or its decimal string form. */
export function optionalInteger(params: Params, name: string, range: { min: number; max: number }, code: ErrorCode = "parameter_invalid"): number | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  const number = numberOf(value);
  if (!Number.isSafeInteger(number) || number < range.min || number > range.max) {
    throw new ApiError(code, `Invalid ${name}: must be an integer from ${range.min} to ${range.max}.`, { param: name });
  }
  return number;
}

export interface MetadataChange {
  /** Entries in the order given; an empty value removes its key (update only). */
  readonly entries: { key: string; value: string }[];
  /** True for `metadata=""`: remove every existing key first. */
  readonly clear: boolean;
}

/**
 * Metadata as given: an object of string values (JSON numbers and booleans are
 * taken in their string form), or `""` to clear. Keys are data, `__proto__` included.
 */
export function optionalMetadata(params: Params, name = "metadata"): MetadataChange | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (value === "") return { entries: [], clear: true };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError("metadata_invalid", `Invalid ${name}: must be an object of key-value pairs, got ${describe(value)}.`, { param: name });
  }
  const entries: { key: string; value: string }[] = [];
  for (const key of Object.keys(value)) {
    const item = (value as Params)[key];
    if (typeof item === "string") entries.push({ key, value: item });
    else if ((typeof item === "number" && Number.isFinite(item)) || typeof item === "boolean") entries.push({ key, value: String(item) });
    else {
      throw new ApiError("metadata_invalid", `Invalid value for ${name}[${key.slice(0, 40)}]: values must be strings, got ${describe(item)}.`, {
        param: `${name}[${key}]`,
      });
    }
  }
  return { entries, clear: false };
}

const BOUNDS = ["gt", "gte", "lt", "lte"] as const;
export type Bounds = Partial<Record<(typeof BOUNDS)[number], bigint>>;

/**
 * `<name>[gt|gte|lt|lte]`, each a whole number from 0 (a JSON number or its decimal text), as every list and a
 * bulk job's filter take it: a bound is named `created[gte]` (under the caller's prefix,
 * `params[filter][created][gte]`), and any other bound is an unknown parameter.
 */
export function optionalBounds(params: Params, name: string): Bounds {
  const value = params[name];
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("parameter_invalid", `Invalid ${name}: give bounds as ${BOUNDS.map((b) => `${name}[${b}]`).join(", ")}.`, { param: name });
  }
  const bounds = value as Params;
  return under(name, () => {
    rejectUnknown(bounds, BOUNDS);
    const out: Bounds = {};
    for (const bound of BOUNDS) {
      const at = optionalInteger(bounds, bound, { min: 0, max: Number.MAX_SAFE_INTEGER });
      if (at !== undefined) out[bound] = BigInt(at);
    }
    return out;
  });
}
