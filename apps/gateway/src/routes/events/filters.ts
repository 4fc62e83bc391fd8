import { ApiError } from "../../errors.js";
import type { Params } from "../../http/body.js";
import { optionalInteger, optionalString, optionalStringList, rejectUnknown, under } from "../../http/params.js";
import { INTEGER_MAX } from "../../schema/params.js";

const invalid = (param: string, message: string) => new ApiError("parameter_invalid", message, { param });

/** `types`: a list of event types (a JSON array, `types[]=a`, or `types[0]=a`); none when absent. */
export function typesParam(params: Params): string[] {
  return optionalStringList(params, "types", "event types") ?? [];
}

const BOUNDS = ["gt", "gte", "lt", "lte"] as const;

/**
 * `<name>[gt|gte|lt|lte]`, each a whole number from 0 (a JSON number or its decimal text), as every list and a
 * bulk job's filter take it: a bound is named `created[gte]` (under the caller's prefix,
 * `params[filter][created][gte]`), and any other bound is an unknown parameter.
 */
function boundsParam(params: Params, name: string): Partial<Record<(typeof BOUNDS)[number], bigint>> {
  const value = params[name];
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(name, `Invalid ${name}: give bounds as ${BOUNDS.map((b) => `${name}[${b}]`).join(", ")}.`);
  }
  const bounds = value as Params;
  return under(name, () => {
    rejectUnknown(bounds, BOUNDS);
    const out: Partial<Record<(typeof BOUNDS)[number], bigint>> = {};
    for (const bound of BOUNDS) {
      const at = optionalInteger(bounds, bound, { min: 0, max: INTEGER_MAX });
      if (at !== undefined) out[bound] = BigInt(at);
    }
    return out;
  });
}

/** `created[gt|gte|lt|lte]`, each a Unix time. */
export const createdParam = (params: Params) => boundsParam(params, "created");

/** `sequence[gt|gte|lt|lte]` (only with `object`: core's to refuse otherwise). */
export const sequenceParam = (params: Params) => boundsParam(params, "sequence");

/** `object`, as given (its form and the filters it combines with are core's to check). */
export const objectParam = (params: Params): string => optionalString(params, "object") ?? "";

/** `type`, as given (its form is core's to check). */
export const typeParam = (params: Params): string => optionalString(params, "type") ?? "";

/** `delivery_success`: `true` or `false` (form text or a JSON boolean); undefined when absent. */
export function deliverySuccessParam(params: Params): boolean | undefined {
  const value = params["delivery_success"];
  if (value === undefined) return undefined;
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw invalid("delivery_success", "Invalid delivery_success: must be true or false.");
}
