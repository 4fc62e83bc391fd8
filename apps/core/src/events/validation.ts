import { errors } from "../errors.js";
import { TYPE_FILTER_MAX_LENGTH, TYPES_FILTER_MAX, type CreatedBounds, type TypeFilter } from "./model.js";

function checkType(value: string, param: string): string {
  if (value.length === 0 || value.length > TYPE_FILTER_MAX_LENGTH) {
    throw errors.invalid("parameter_invalid", `Invalid ${param}: must be 1 to ${TYPE_FILTER_MAX_LENGTH} characters.`, param);
  }
  return value;
}

/** `type` (exact, or a prefix ending in `*`) or `types[]` (up to 20 exact types), never both; undefined when neither. */
export function typeFilterOf(type: string, types: readonly string[]): TypeFilter | undefined {
  if (type !== "" && types.length > 0) throw errors.invalid("parameter_invalid", "You may only specify one of type and types.", "types");
  if (types.length > TYPES_FILTER_MAX) throw errors.invalid("parameter_invalid", `Invalid types: at most ${TYPES_FILTER_MAX} types.`, "types");
  if (types.length > 0) return { anyOf: types.map((t) => checkType(t, "types")) };
  if (type === "") return undefined;
  checkType(type, "type");
  // Only a trailing `*` is a wildcard; `*` alone matches every type.
  if (type.endsWith("*")) return { prefix: type.slice(0, -1) };
  return { exact: type };
}

/** The bounds given, each a Unix time (the wire carries int64). */
export function createdBoundsOf(range: { gt?: bigint; gte?: bigint; lt?: bigint; lte?: bigint } | undefined): CreatedBounds {
  const bounds: CreatedBounds = {};
  for (const key of ["gt", "gte", "lt", "lte"] as const) {
    const value = range?.[key];
    if (value !== undefined) bounds[key] = Number(value);
  }
  return bounds;
}
