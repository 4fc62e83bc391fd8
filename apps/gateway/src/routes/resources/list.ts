import { pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { filterParams, resourceFilterOf } from "./filter.js";
import { pageOf, ResourceListObject } from "./objects.js";

/**
 * GET /v1/resources: one page, newest first, in the list envelope; filtered by status (one or several),
 * one metadata key, a `created` range and up to 100 ids, in any combination with each other and the cursors.
 */
export const listResources = defineOperation({
  method: "GET",
  path: "/v1/resources",
  summary: "List resources",
  scope: "resources:read",
  parameters: { ...pageParams("res", "resource"), ...filterParams("list") },
  success: { status: 200, description: "One page of resources, newest first.", object: ResourceListObject },
  errors: ["limit_invalid", "parameter_invalid", "parameter_invalid_empty", "metadata_invalid"],
  service: "resources",
  rpc: "listResources",
  request({ params, tenant }) {
    // The filter's rules (counts, id form, keys) are core's to refuse (one rule, one place).
    // `asJson`: core answers the page's objects as JSON text, sent on as they are (objects.ts `pageOf`).
    return { tenant, ...pageRequest(params), filter: resourceFilterOf(params), asJson: true };
  },
  reply: (page) => pageOf(page, page.hasMore),
});
