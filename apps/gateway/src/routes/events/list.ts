import { createdParam, pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { deliverySuccessParam, objectParam, sequenceParam, typeParam, typesParam } from "./filters.js";
import { EVENT_FILTERS, EventListObject } from "./objects.js";

/** GET /v1/events: one page, newest first, in the list envelope. */
export const listEvents = defineOperation({
  method: "GET",
  path: "/v1/events",
  summary: "List events",
  scope: "events:read",
  parameters: { ...pageParams("evt", "event"), ...EVENT_FILTERS },
  success: {
    status: 200,
    description: "One page of events, newest first (kept 30 days); with `object`, that object's events, newest change (highest `sequence`) first.",
    object: EventListObject,
  },
  errors: ["limit_invalid", "parameter_invalid", "parameter_missing"],
  service: "events",
  rpc: "listEvents",
  request({ params, tenant }) {
    // Type with types is core's to refuse (one rule, one place).
    const deliverySuccess = deliverySuccessParam(params);
    return {
      tenant,
      ...pageRequest(params),
      type: typeParam(params),
      types: typesParam(params),
      created: createdParam(params),
      ...(deliverySuccess !== undefined ? { deliverySuccess } : {}),
      object: objectParam(params),
      sequence: sequenceParam(params),
    };
  },
  reply: (page) => ({ items: page.events, hasMore: page.hasMore }),
});
