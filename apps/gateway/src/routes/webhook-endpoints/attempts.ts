import { ATTEMPT_STATUSES, exampleId } from "@rms/proto";
import { optionalEnum, optionalString } from "../../parsing/params.js";
import { CREATED_RANGE_PARAM, createdParam, idSchema, pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { WebhookAttemptListObject } from "./attempt-objects.js";
import { ENDPOINT_ID_PATH } from "./objects.js";

/** GET /v1/webhook_endpoints/:id/attempts: one page of the endpoint's delivery attempts, newest first. */
export const listWebhookAttempts = defineOperation({
  method: "GET",
  path: "/v1/webhook_endpoints/:id/attempts",
  summary: "List a webhook endpoint's delivery attempts",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  parameters: {
    ...pageParams("wa", "attempt"),
    event: { example: exampleId("evt"), schema: idSchema("evt", "Only attempts of this event.") },
    status: { example: "failed", schema: { type: "string", enum: [...ATTEMPT_STATUSES], description: "Only attempts with this outcome." } },
    created: {
      ...CREATED_RANGE_PARAM,
      schema: {
        ...CREATED_RANGE_PARAM.schema,
        description:
          "Bounds on the attempt's time, Unix seconds (`created[gte]=...`): the time its id begins with, when the attempt was due (the time it was " +
          "made, unless the endpoint's lane was behind). With any filter.",
      },
    },
  },
  success: { status: 200, description: "One page of attempts, newest first (kept 30 days).", object: WebhookAttemptListObject },
  errors: ["resource_missing", "limit_invalid", "parameter_invalid", "parameter_invalid_empty"],
  service: "webhookEndpoints",
  rpc: "listWebhookAttempts",
  request({ params, path, tenant }) {
    const page = pageRequest(params);
    // A malformed event id is core's to refuse (one rule, one place).
    const eventId = optionalString(params, "event") ?? "";
    const status = optionalEnum(params, "status", ATTEMPT_STATUSES) ?? "";
    return { tenant, webhookEndpointId: path["id"] ?? "", ...page, eventId, status, created: createdParam(params) };
  },
  reply: (page) => page,
});
