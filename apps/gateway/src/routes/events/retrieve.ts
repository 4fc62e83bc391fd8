import { defineOperation } from "../../engine/operation.js";
import { EVENT_ID_PATH, EventObject } from "./objects.js";

/** GET /v1/events/:id */
export const retrieveEvent = defineOperation({
  method: "GET",
  path: "/v1/events/:id",
  summary: "Retrieve an event",
  scope: "events:read",
  pathParameters: EVENT_ID_PATH,
  success: { status: 200, description: "The event.", object: EventObject },
  errors: ["resource_missing"],
  service: "events",
  rpc: "getEvent",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ event }) => event,
});
