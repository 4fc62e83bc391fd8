import type { MessageInitShape } from "@bufbuild/protobuf";
import { exampleId, METADATA_LIMITS, RESOURCE_FILTER_LIMITS, type ResourceFilterSchema } from "@rms/proto";
import { ApiError } from "../../errors.js";
import type { Params } from "../../parsing/body.js";
import { describe, listValue, optionalEnum, optionalMetadata } from "../../parsing/params.js";
import type { JsonSchema } from "../../schema/objects.js";
import { CREATED_RANGE_PARAM, createdParam, idSchema } from "../../schema/params.js";
import type { ParamSpec } from "../../engine/operation.js";
import { STATUS_NAMES, statusToProto } from "./objects.js";

/**
 * The resource filter (CONTRACT.md section 3, "The filter model") as the list's query string and a bulk
 * job's `params[filter]` give it, JSON or form alike (the body decoder made both one params object): its
 * types here, its rules (how many ids and metadata keys, id form, key and value rules) in core, the same for
 * both (resources/filter.ts there). A list is a JSON array, `ids[]=a&ids[]=b`, `ids[0]=a`, or one value.
 */

/** The names the filter reads. */
export const FILTER_PARAMS = ["ids", "status", "metadata", "created"] as const;

/** A list of strings, or one string as a list of one; `noun` names an item in the refusal. */
function stringsAt(params: Params, name: string, noun: string): string[] | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  const items = typeof value === "string" ? [value] : listValue(value, name);
  if (!items) throw new ApiError("parameter_invalid", `Invalid ${name}: must be a list of ${noun}, got ${describe(value)}.`, { param: name });
  if (items.length === 0) throw new ApiError("parameter_invalid_empty", `Invalid ${name}: give at least one value.`, { param: name });
  items.forEach((item, i) => {
    if (typeof item !== "string")
      throw new ApiError("parameter_invalid", `Invalid ${name}[${i}]: must be one of the ${noun}, got ${describe(item)}.`, { param: `${name}[${i}]` });
  });
  return items as string[];
}

/** The filter of `params` as the core message (unknown params are the caller's to refuse). */
export function resourceFilterOf(params: Params): MessageInitShape<typeof ResourceFilterSchema> {
  const ids = stringsAt(params, "ids", "resource ids") ?? [];
  const one = typeof params["status"] === "string";
  const status = (stringsAt(params, "status", "statuses") ?? []).map((value, i) => {
    const name = one ? "status" : `status[${i}]`;
    return statusToProto(optionalEnum({ [name]: value }, name, STATUS_NAMES));
  });
  const metadata = optionalMetadata(params);
  if (metadata?.clear) throw new ApiError("parameter_invalid", 'Invalid metadata: a filter needs keys and values, not "".', { param: "metadata" });
  return { ids, status, metadata: metadata?.entries ?? [], created: createdParam(params) };
}

const STATUS = { type: "string", enum: [...STATUS_NAMES] };

/** The filter's parameters as the API document describes them, with `where` the limits of the list or a job. */
export function filterParams(where: "list" | "job"): Record<(typeof FILTER_PARAMS)[number], ParamSpec> {
  const { ids, metadataKeys } = RESOURCE_FILTER_LIMITS[where];
  const listNote = where === "list" ? " combined with any other filter and the cursors" : "";
  return {
    ids: {
      example: [exampleId("res")],
      schema: {
        type: "array",
        minItems: 1,
        maxItems: ids,
        items: idSchema("res"),
        description: `Up to ${ids} resource ids${listNote}: those that exist in this account and mode match (unknown ids are simply absent).`,
      },
    },
    status: {
      example: "active",
      schema: {
        oneOf: [STATUS, { type: "array", minItems: 1, items: STATUS }],
        description: "One status, or several (any of them): `status=active&status=paused`, `status[]=active&status[]=paused`.",
      },
    },
    metadata: {
      example: { plan: "pro" },
      schema: {
        type: "object",
        minProperties: 1,
        maxProperties: metadataKeys,
        propertyNames: { minLength: 1, maxLength: METADATA_LIMITS.keyLength, pattern: "^[^\\[\\]]*$" },
        additionalProperties: { type: ["string", "number", "boolean"], minLength: 1, maxLength: METADATA_LIMITS.valueLength },
        description: `Equality on ${metadataKeys === 1 ? "one key" : `up to ${metadataKeys} keys`}: \`metadata[plan]=pro\`.`,
      },
    },
    created: CREATED_RANGE_PARAM,
  };
}

/** The filter's schema as a property of a job's `params` (and of the job object that echoes them). */
export function filterSchema(where: "list" | "job", description: string): JsonSchema {
  const properties = Object.fromEntries(Object.entries(filterParams(where)).map(([name, spec]) => [name, spec.schema]));
  return { type: "object", additionalProperties: false, minProperties: 1, description, properties };
}
