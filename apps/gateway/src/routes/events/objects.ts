import { ENDPOINT_DISABLED_REASONS, exampleId, ID_PREFIXES, ID_SUFFIX_CHARS, type Event } from "@rms/proto";
import { API_VERSION } from "../../http/request-id.js";
import { constant, coreJson, field, listOf, publicObject } from "../../schema/objects.js";
import { CREATED_RANGE_PARAM, idSchema, INTEGER_MAX, LIST_LIMIT_MAX } from "../../schema/params.js";
import type { ParamSpec } from "../../engine/operation.js";

const EVENT_ID = idSchema("evt", "An event id: `evt_` and an opaque suffix.");
const SEQUENCE = { type: "integer", minimum: 0, maximum: INTEGER_MAX } as const;
/** Most exact types one `types` filter may name (CONTRACT.md section 7). */
export const TYPES_FILTER_MAX = 20;

/** The public event object of CONTRACT.md section 7, fields in contract order. */
export const EventObject = publicObject<Event>("Event", {
  id: field(EVENT_ID, (e) => e.id),
  object: constant("event"),
  type: field(
    { type: "string", description: "`resource.created`, `resource.updated`, `resource.deleted`, `job.failed`, `webhook_endpoint.disabled`, ..." },
    (e) => e.type,
  ),
  created: field({ type: "integer", description: "Unix seconds." }, (e) => Number(e.created)),
  livemode: field({ type: "boolean" }, (e) => e.livemode),
  api_version: constant(API_VERSION),
  sequence: field(
    { type: "integer", description: "Grows with every committed change of the same object: drop an event older than one already applied." },
    (e) => Number(e.sequence),
  ),
  pending_webhooks: field(
    { type: "integer", minimum: 0, description: "Endpoints that have not yet answered this event with a 2xx." },
    (e) => e.pendingWebhooks,
  ),
  data: field(
    {
      type: "object",
      required: ["object"],
      properties: {
        object: { type: "object", description: "The object as the change left it (a deletion: as it was)." },
        previous_attributes: { type: "object", description: "`*.updated` only: the old values of the changed fields." },
        reason: {
          type: "string",
          enum: [...ENDPOINT_DISABLED_REASONS],
          description: "`webhook_endpoint.disabled` only: `gone` (the endpoint answered 410) or `failing` (5 days of failed attempts).",
        },
      },
    },
    (e) => coreJson(e.dataJson),
  ),
  request: field(
    {
      type: "object",
      required: ["id", "idempotency_key"],
      properties: { id: { type: ["string", "null"] }, idempotency_key: { type: ["string", "null"] } },
    },
    (e) => ({ id: e.requestId ?? null, idempotency_key: e.idempotencyKey ?? null }),
  ),
});

export const EventListObject = listOf(EventObject, "/v1/events", LIST_LIMIT_MAX);

/** The `:id` of `/v1/events/:id`. */
export const EVENT_ID_PATH = { id: { example: exampleId("evt"), schema: { type: "string", description: "The event id." } } } satisfies Record<
  string,
  ParamSpec
>;

/** The filters of `GET /v1/events`. */
export const EVENT_FILTERS = {
  type: {
    example: "resource.*",
    notWith: "types",
    schema: {
      type: "string",
      minLength: 1,
      maxLength: 100,
      description: "An exact event type, or a prefix ending in `*` (`resource.*`). Not together with `types`.",
    },
  },
  types: {
    // No example: exclusive with `type`, whose example is shown (the examples together make one valid request).
    example: undefined,
    schema: {
      type: "array",
      maxItems: TYPES_FILTER_MAX,
      items: { type: "string", minLength: 1, maxLength: 100 },
      description: `Up to ${TYPES_FILTER_MAX} exact event types (\`types[]=a&types[]=b\`). Not together with \`type\`.`,
    },
  },
  created: CREATED_RANGE_PARAM,
  delivery_success: {
    example: false,
    schema: { type: "boolean", description: "`true`: every webhook endpoint answered 2xx (`pending_webhooks` is 0); `false`: at least one has not yet." },
  },
  // `object` and `sequence` exclude the other filters: no examples, so a request made of all the examples is valid
  // (the gap-repair request is in their descriptions and the README).
  object: {
    example: undefined,
    schema: {
      type: "string",
      pattern: `^(${ID_PREFIXES.join("|")})_[0-9A-Za-z]{${ID_SUFFIX_CHARS}}$`,
      description:
        "An object id (`res_...`, `job_...`, `we_...`): only that object's events, newest change (highest `sequence`) first. Combines with `sequence` " +
        "and the cursors only (a cursor is then an event of that object).",
    },
  },
  sequence: {
    example: undefined,
    schema: {
      type: "object",
      additionalProperties: false,
      properties: { gt: SEQUENCE, gte: SEQUENCE, lt: SEQUENCE, lte: SEQUENCE },
      description:
        "Bounds on `sequence`, only together with `object` (else 400 `parameter_missing`, param `object`): `sequence[gt]=7` after applying sequence 7 " +
        "gets exactly the events missed since.",
    },
  },
} satisfies Record<string, ParamSpec>;
