import { exampleId, idPattern, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, METADATA_LIMITS, pageSize, type IdPrefix } from "@rms/proto";
import { ApiError } from "../errors.js";
import type { Params } from "../parsing/body.js";
import { numberOf, optionalBounds, optionalString } from "../parsing/params.js";
import type { JsonSchema } from "./objects.js";

/** A parameter an operation accepts, as the API description shows it. */
export interface ParamSpec {
  /** Its JSON Schema, with a `description`. */
  readonly schema: JsonSchema;
  /** Required in a request body (query parameters are all optional). */
  readonly required?: boolean;
  /**
   * A valid value, shown in the description (and sent by the drift test). The examples of one operation together
   * make one valid request, so of two exclusive parameters only one has an example: the other says
   * `undefined` (and none is shown).
   */
  readonly example: unknown;
  /** A parameter this one may not be sent with (400 when both are): the API document lists the pair. */
  readonly notWith?: string;
}

/** Page sizes of every list. */
export { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX };

/**
 * Request metadata: an object of at most 50 keys (key 1-40 characters, no brackets) to strings
 * (numbers and booleans are taken in string form), or `""`. On update, keys merge and `""` clears.
 */
export function metadataParam(update: boolean): ParamSpec {
  return {
    example: { plan: "pro" },
    schema: {
      oneOf: [
        {
          type: "object",
          maxProperties: METADATA_LIMITS.keys,
          propertyNames: { minLength: 1, maxLength: METADATA_LIMITS.keyLength, pattern: "^[^\\[\\]]*$" },
          additionalProperties: { type: ["string", "number", "boolean"], maxLength: METADATA_LIMITS.valueLength },
          description: update ? 'Keys to set; a key set to `""` is removed. Merged into the existing metadata.' : "Key-value pairs to attach.",
        },
        { type: "string", const: "", description: update ? "Removes every key." : "No metadata." },
      ],
    },
  };
}

/** The schema of stored metadata in a public object. */
export const METADATA_OBJECT = {
  type: "object",
  maxProperties: METADATA_LIMITS.keys,
  additionalProperties: { type: "string", maxLength: METADATA_LIMITS.valueLength },
} as const;

/** The largest integer a parameter takes (2^53 - 1): one that JSON numbers carry exactly. */
export const INTEGER_MAX = Number.MAX_SAFE_INTEGER;

const UNIX_TIME = { type: "integer", minimum: 0, maximum: INTEGER_MAX } as const;

/** `created[gt|gte|lt|lte]` of a list: bounds on the creation time, Unix seconds. */
export const CREATED_RANGE_PARAM: ParamSpec = {
  example: { gte: 1700000000 },
  schema: {
    type: "object",
    additionalProperties: false,
    // At least one bound: an empty range is no condition (a job's filter with only `created: {}` is refused as empty).
    minProperties: 1,
    properties: { gt: UNIX_TIME, gte: UNIX_TIME, lt: UNIX_TIME, lte: UNIX_TIME },
    description: "Bounds on the creation time, Unix seconds: `created[gt]`, `created[gte]`, `created[lt]`, `created[lte]`.",
  },
};

/** `created[gt|gte|lt|lte]` of a list as asked (CREATED_RANGE_PARAM), each a Unix time. */
export const createdParam = (params: Params) => optionalBounds(params, "created");

/** `limit` of every list: 1 to 100, default 20. */
export const LIMIT_PARAM: ParamSpec = {
  example: 3,
  schema: {
    type: "integer",
    minimum: 1,
    maximum: LIST_LIMIT_MAX,
    default: LIST_LIMIT_DEFAULT,
    description: `Page size, 1 to ${LIST_LIMIT_MAX}; default ${LIST_LIMIT_DEFAULT}.`,
  },
};

/** The schema of an id of `prefix` (`res_` and an opaque suffix), with its description when given. */
export function idSchema(prefix: IdPrefix, description?: string): { type: "string"; pattern: string; description?: string } {
  return { type: "string", pattern: `^${idPattern(prefix)}$`, ...(description ? { description } : {}) };
}

/** `limit`, `starting_after` and `ending_before` of a list whose cursors are ids of `prefix` (a `noun` id). */
export function pageParams(prefix: IdPrefix, noun: string): Record<string, ParamSpec> {
  // A cursor is a well-formed id (that object may since have been deleted); an empty one is refused like any empty filter.
  const cursor = { type: "string", pattern: `^${idPattern(prefix)}$` };
  const example = exampleId(prefix);
  return {
    limit: LIMIT_PARAM,
    starting_after: {
      example,
      notWith: "ending_before",
      schema: { ...cursor, description: `Cursor: the page after this ${noun} id (older). Not together with \`ending_before\` (400).` },
    },
    // No example: the two are exclusive, and a request made of every example must be valid (starting_after's is shown).
    ending_before: {
      example: undefined,
      schema: { ...cursor, description: `Cursor: the page before this ${noun} id (newer). Not together with \`starting_after\` (400).` },
    },
  };
}

/** A list's `limit` by the API's one page-size rule (@rms/proto's `pageSize`): 1 to 100, else 400 `limit_invalid`; `fallback` when absent. */
export function listLimit(params: Params, fallback: number = LIST_LIMIT_DEFAULT): number {
  const asked = params["limit"];
  return pageSize(asked === undefined ? undefined : numberOf(asked), (message) => new ApiError("limit_invalid", message, { param: "limit" }), fallback);
}

/**
 * The page a list request asks for (the parameters of `pageParams`), cursors `""` when absent. Both cursors at once
 * and malformed cursors are core's to refuse (one rule, one place).
 */
export function pageRequest(params: Params): { limit: number; startingAfter: string; endingBefore: string } {
  return {
    limit: listLimit(params),
    startingAfter: optionalString(params, "starting_after") ?? "",
    endingBefore: optionalString(params, "ending_before") ?? "",
  };
}
