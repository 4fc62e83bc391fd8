import { ApiError } from "../../errors.js";
import { optionalInteger } from "../../parsing/params.js";
import { defineOperation } from "../../engine/operation.js";
import { INTEGER_MAX } from "../../schema/params.js";
import { RecoveryObject } from "./attempt-objects.js";
import { ENDPOINT_ID_PATH } from "./objects.js";

/** POST /v1/webhook_endpoints/:id/recover: one more attempt of every event since `since` that never reached it, 10,000 per call. */
export const recoverWebhookEndpoint = defineOperation({
  method: "POST",
  path: "/v1/webhook_endpoints/:id/recover",
  summary: "Recover a webhook endpoint's failed events",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  parameters: {
    since: {
      required: true,
      // An hour before this process started: any fixed time would leave the 14-day window.
      example: Math.floor(Date.now() / 1000) - 3600,
      schema: {
        type: "integer",
        minimum: 0,
        maximum: INTEGER_MAX,
        description:
          "Unix seconds, at most 14 days ago and not in the future: every event since then whose deliveries to this endpoint all failed gets one " +
          "recovery delivery.",
      },
    },
  },
  success: {
    status: 200,
    description: "How many recovery deliveries were scheduled (at most 10,000, oldest events first), and whether more are left.",
    object: RecoveryObject,
  },
  errors: ["resource_missing", "parameter_missing", "parameter_invalid", "state_conflict"],
  service: "webhookEndpoints",
  rpc: "recoverWebhookEndpoint",
  request({ params, path, tenant }) {
    const since = optionalInteger(params, "since", { min: 0, max: INTEGER_MAX });
    if (since === undefined) throw new ApiError("parameter_missing", "Missing required param: since.", { param: "since" });
    return { tenant, id: path["id"] ?? "", since: BigInt(since) };
  },
  reply: ({ scheduled, hasMore }) => ({ scheduled, hasMore }),
});
