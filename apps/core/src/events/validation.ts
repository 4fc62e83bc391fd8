import { ID_PREFIXES, type ReadEventLogRequest } from "@rms/proto";
import { errors } from "../errors.js";
import { isId } from "../ids.js";
import { LOG_READ_DEFAULT, LOG_READ_MAX, type LogStart, type StreamFilter } from "./log.js";
import { TYPE_FILTER_MAX_LENGTH, TYPES_FILTER_MAX, type Bounds, type CreatedBounds, type ObjectFilter, type TypeFilter } from "./model.js";

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

type WireBounds = { gt?: bigint; gte?: bigint; lt?: bigint; lte?: bigint } | undefined;

/** The bounds given (the wire carries int64). */
function boundsOf(range: WireBounds): Bounds {
  const bounds: Bounds = {};
  for (const key of ["gt", "gte", "lt", "lte"] as const) {
    const value = range?.[key];
    if (value !== undefined) bounds[key] = Number(value);
  }
  return bounds;
}

/** The bounds given, each a Unix time. */
export function createdBoundsOf(range: WireBounds): CreatedBounds {
  return boundsOf(range);
}

/** The other filters of a list request, by their API names, to refuse beside `object`. */
export interface OtherFilters {
  type: string;
  types: readonly string[];
  created: CreatedBounds;
  deliverySuccess: boolean | undefined;
}

/**
 * `object` (an id of a kind the service makes) with `sequence[gt|gte|lt|lte]`; undefined when `object` is
 * absent. `sequence` needs `object` (400 `parameter_missing`, param `object`). An object's events are served
 * by one index, (account, livemode, object id, sequence), which no other filter fits: `object` with `type`,
 * `types`, `created` or `delivery_success` is 400 rather than a scan (CONTRACT.md section 7).
 */
export function objectFilterOf(object: string, sequence: WireBounds, others: OtherFilters): ObjectFilter | undefined {
  const bounds = boundsOf(sequence);
  if (object === "") {
    if (Object.keys(bounds).length > 0)
      throw errors.invalid("parameter_missing", "sequence[...] needs object: the id of the object whose events to list.", "object");
    return undefined;
  }
  if (!ID_PREFIXES.some((prefix) => isId(prefix, object))) {
    throw errors.invalid("parameter_invalid", `Invalid object: '${object.slice(0, 64)}' is not an object id (such as res_..., job_... or we_...).`, "object");
  }
  for (const value of Object.values(bounds)) {
    if (!Number.isSafeInteger(value) || value < 0) throw errors.invalid("parameter_invalid", "Invalid sequence: bounds are whole numbers from 0.", "sequence");
  }
  const refused = [
    others.type !== "" ? "type" : null,
    others.types.length > 0 ? "types" : null,
    Object.keys(others.created).length > 0 ? "created" : null,
    others.deliverySuccess !== undefined ? "delivery_success" : null,
  ].find((name) => name !== null);
  if (refused) {
    throw errors.invalid(
      "parameter_invalid",
      `Invalid ${refused}: not together with object (an object's events are listed by sequence, with sequence[...] and the cursors).`,
      refused,
    );
  }
  return { id: object, sequence: bounds };
}

/** What a stream's catch-up read asks (ReadEventLog), checked. */
export interface LogReadInput {
  readonly start: LogStart;
  readonly limit: number;
  readonly filter: StreamFilter;
  readonly afterClusterTime: bigint;
}

/**
 * ReadEventLog's request: `after_position` (from 0) or `after_event` (an event id), `limit` (1 to LOG_READ_MAX;
 * 0: the default), `types` (up to 20, each exact or a prefix ending in `*`) and `object` (an object id or empty).
 */
export function logReadOf(request: ReadEventLogRequest): LogReadInput {
  const after = request.after;
  let start: LogStart = null;
  if (after.case === "afterPosition") {
    if (after.value < 0n) throw errors.invalid("parameter_invalid", "Invalid after_position: a position is a whole number from 0.", "after_position");
    start = { position: Number(after.value) };
  } else if (after.case === "afterEvent") {
    if (!isId("evt", after.value))
      throw errors.invalid("parameter_invalid", `Invalid starting_after: '${after.value.slice(0, 64)}' is not an event id (evt_...).`, "starting_after");
    start = { event: after.value };
  }
  const limit = request.limit === 0 ? LOG_READ_DEFAULT : request.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > LOG_READ_MAX) throw errors.invalid("limit_invalid", `limit must be from 1 to ${LOG_READ_MAX}.`, "limit");
  if (request.types.length > TYPES_FILTER_MAX) throw errors.invalid("parameter_invalid", `Invalid types: at most ${TYPES_FILTER_MAX} types.`, "types");
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const type of request.types) {
    checkType(type, "types");
    if (type.endsWith("*")) prefixes.push(type.slice(0, -1));
    else exact.add(type);
  }
  const object = request.object;
  if (object !== "" && !ID_PREFIXES.some((prefix) => isId(prefix, object))) {
    throw errors.invalid("parameter_invalid", `Invalid object: '${object.slice(0, 64)}' is not an object id (such as res_..., job_... or we_...).`, "object");
  }
  return { start, limit, filter: { exact, prefixes, object }, afterClusterTime: request.afterClusterTime };
}
