import { optionalEnum, optionalInteger, optionalString } from "../../http/params.js";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, pageParams } from "../../schema/params.js";
import { defineOperation } from "../operation.js";
import { RESOURCE_PARAMS, ResourceListObject, STATUS_NAMES, statusToProto } from "./objects.js";

/** GET /v1/resources: one page, newest first, in the list envelope. */
export const listResources = defineOperation({
  method: "GET",
  path: "/v1/resources",
  summary: "List resources",
  scope: "resources:read",
  parameters: { ...pageParams("res", "resource"), status: RESOURCE_PARAMS.status },
  success: { status: 200, description: "One page of resources, newest first.", object: ResourceListObject },
  errors: ["limit_invalid", "parameter_invalid", "parameter_invalid_empty"],
  service: "resources",
  rpc: "listResources",
  request({ params, tenant }) {
    const limit = optionalInteger(params, "limit", { min: 1, max: LIST_LIMIT_MAX }, "limit_invalid") ?? LIST_LIMIT_DEFAULT;
    const startingAfter = optionalString(params, "starting_after") ?? "";
    // Both cursors at once, and malformed cursors, are core's to refuse (one rule, one place).
    const endingBefore = optionalString(params, "ending_before") ?? "";
    const status = optionalEnum(params, "status", STATUS_NAMES);
    return { tenant, limit, startingAfter, endingBefore, status: statusToProto(status) };
  },
  reply: (page) => ({ items: page.resources, hasMore: page.hasMore }),
});
