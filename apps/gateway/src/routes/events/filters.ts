import { ApiError } from "../../errors.js";
import type { Params } from "../../parsing/body.js";
import { optionalBounds, optionalString, optionalStringList } from "../../parsing/params.js";

const invalid = (param: string, message: string) => new ApiError("parameter_invalid", message, { param });

/** `types`: a list of event types (a JSON array, `types[]=a`, or `types[0]=a`); none when absent. */
export function typesParam(params: Params): string[] {
  return optionalStringList(params, "types", "event types") ?? [];
}

/** `sequence[gt|gte|lt|lte]` (only with `object`: core's to refuse otherwise). */
export const sequenceParam = (params: Params) => optionalBounds(params, "sequence");

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
