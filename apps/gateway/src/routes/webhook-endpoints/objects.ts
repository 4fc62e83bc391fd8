import {
  WEBHOOK_ENDPOINT_DESCRIPTION_MAX,
  EVENT_TYPES,
  exampleId,
  metadataMap,
  SIGNATURE_SCHEMES,
  WEBHOOK_ENDPOINT_STATUS,
  WebhookEndpointStatus,
  type WebhookEndpoint,
  type WebhookEndpointStatusName,
} from "@rms/proto";
import { ApiError } from "../../errors.js";
import type { Params } from "../../parsing/body.js";
import { optionalString, optionalStringList } from "../../parsing/params.js";
import { API_VERSION } from "../../http/request-id.js";
import { constant, deletedOf, field, listOf, publicObject, schemaRef, type Field, type PublicObject } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX, METADATA_OBJECT } from "../../schema/params.js";
import type { ParamSpec } from "../../engine/operation.js";

export const STATUS_NAMES = WEBHOOK_ENDPOINT_STATUS.names;

/** A public status name as the proto enum; absent means UNSPECIFIED (default / unchanged). */
export function statusToProto(status: WebhookEndpointStatusName | undefined): WebhookEndpointStatus {
  return status === undefined ? WebhookEndpointStatus.UNSPECIFIED : WEBHOOK_ENDPOINT_STATUS.valueOf(status);
}

const ENDPOINT_ID = idSchema("we", "A webhook endpoint id: `we_` and an opaque suffix.");
/** `*` or the event types an endpoint may name (core checks; this describes them). */
const ENABLED_EVENTS = { type: "array", minItems: 1, items: { type: "string", enum: ["*", ...EVENT_TYPES] } };
const STATUS = { type: "string", enum: [...STATUS_NAMES] };

function fail(): never {
  throw ApiError.internal();
}

const fields: Record<string, Field<WebhookEndpoint>> = {
  id: field(ENDPOINT_ID, (w) => w.id),
  object: constant("webhook_endpoint"),
  url: field({ type: "string", format: "uri", maxLength: 2048 }, (w) => w.url),
  enabled_events: field(ENABLED_EVENTS, (w) => w.enabledEvents),
  status: field(STATUS, (w) => WEBHOOK_ENDPOINT_STATUS.nameOf(w.status) ?? fail()),
  description: field({ type: ["string", "null"], maxLength: WEBHOOK_ENDPOINT_DESCRIPTION_MAX }, (w) => w.description ?? null),
  metadata: field(METADATA_OBJECT, (w) => metadataMap(w.metadata.map((e) => [e.key, e.value]))),
  livemode: field({ type: "boolean" }, (w) => w.livemode),
  api_version: constant(API_VERSION),
  created: field({ type: "integer", description: "Unix seconds." }, (w) => Number(w.created)),
  signature_scheme: field(
    { type: "string", enum: [...SIGNATURE_SCHEMES], description: "`v1`: HMAC-SHA256 with the `whsec_` secret; `v1a`: Ed25519, verified with `public_key`." },
    (w) => ((SIGNATURE_SCHEMES as readonly string[]).includes(w.signatureScheme) ? w.signatureScheme : fail()),
  ),
  public_key: field(
    {
      type: ["string", "null"],
      pattern: "^whpk_[A-Za-z0-9+/]{43}=$",
      description: "A `v1a` endpoint's Ed25519 public key (`whpk_` + base64 of its 32 bytes): verifies `v1a` signatures. Null for `v1`.",
    },
    (w) => w.publicKey ?? null,
  ),
};

/** The public endpoint object of CONTRACT.md section 7, without its secret (retrieve, list, update; the create and rotate answers of a `v1a` endpoint). */
export const WebhookEndpointObject = publicObject<WebhookEndpoint>("WebhookEndpoint", fields);

/** The same with its newest signing secret: the create and rotate answers of a `v1` endpoint only. */
const WebhookEndpointWithSecret = publicObject<WebhookEndpoint>("WebhookEndpointWithSecret", {
  ...fields,
  secret: field(
    { type: "string", pattern: "^whsec_[A-Za-z0-9+/]{43}=$", description: "The signing secret: shown here and in the rotate answer only." },
    (w) => w.secret ?? fail(),
  ),
});

/**
 * The create and rotate answers: a `v1` endpoint with its new `secret` (shown only there), a `v1a` endpoint
 * with its `public_key` and no secret (its private key never leaves the service).
 */
export const WebhookEndpointWithSecretObject: PublicObject<WebhookEndpoint> = {
  name: "WebhookEndpointWithKey",
  uses: [WebhookEndpointWithSecret as PublicObject<never>, WebhookEndpointObject as PublicObject<never>],
  schema: {
    oneOf: [schemaRef(WebhookEndpointWithSecret.name), schemaRef(WebhookEndpointObject.name)],
    description: "`signature_scheme` `v1`: with `secret`; `v1a`: with `public_key`, no secret.",
  },
  render: (w) => (w?.secret !== undefined ? WebhookEndpointWithSecret.render(w) : WebhookEndpointObject.render(w)),
};

/** `signature_scheme` of create and rotate. */
export const SIGNATURE_SCHEME_PARAM = {
  example: "v1a",
  schema: {
    type: "string",
    enum: [...SIGNATURE_SCHEMES],
    description: "`v1` (HMAC-SHA256 with a `whsec_` secret) or `v1a` (Ed25519: the answer carries `public_key`, no secret).",
  },
} satisfies ParamSpec;

export const WebhookEndpointListObject = listOf(WebhookEndpointObject, "/v1/webhook_endpoints", LIST_LIMIT_MAX);
export const DeletedWebhookEndpointObject = deletedOf(WebhookEndpointObject, "webhook_endpoint", ENDPOINT_ID);

/** The `:id` of `/v1/webhook_endpoints/:id`. */
export const ENDPOINT_ID_PATH = { id: { example: exampleId("we"), schema: { type: "string", description: "The webhook endpoint id." } } } satisfies Record<
  string,
  ParamSpec
>;

/** Parameters of create and update. */
export const ENDPOINT_PARAMS = {
  url: {
    // A reserved name (RFC 2606): an endpoint made from the example delivers to no one.
    example: "https://hooks.rms.invalid/webhooks",
    schema: { type: "string", minLength: 1, maxLength: 2048, description: "Where events are POSTed: `https`, a public host, no credentials or fragment." },
  },
  enabled_events: {
    example: ["resource.created", "resource.deleted"],
    schema: { ...ENABLED_EVENTS, description: "`*` (every type) or known event types (`enabled_events[]=a&enabled_events[]=b` in forms)." },
  },
  status: { example: "enabled", schema: { ...STATUS, description: "`enabled` (default on create) or `disabled`." } },
  description: {
    example: "Production receiver",
    schema: {
      type: ["string", "null"],
      maxLength: WEBHOOK_ENDPOINT_DESCRIPTION_MAX,
      description: `At most ${WEBHOOK_ENDPOINT_DESCRIPTION_MAX} characters; \`""\` or null removes it.`,
    },
  },
} satisfies Record<string, ParamSpec>;

/**
 * `enabled_events` as a list of strings: a JSON array, `enabled_events[]=a&enabled_events[]=b`, or the
 * indexed form `enabled_events[0]=a`; `""` is the empty list (which core refuses). Undefined when absent.
 */
export function enabledEventsParam(params: Params): string[] | undefined {
  if (params["enabled_events"] === "") return [];
  return optionalStringList(params, "enabled_events", "event types");
}

/** `description`: a string, or null (the same as `""`: none). */
export function descriptionParam(params: Params): string | undefined {
  if (params["description"] === null) return "";
  return optionalString(params, "description");
}
