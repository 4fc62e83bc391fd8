import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from "@rms/proto";
import { optionalEnum, optionalInteger, optionalString } from "../http/params.js";
import type { Operation } from "./operation.js";
import { STATUS_NAMES, renderResource, statusToProto } from "./resources.render.js";

export { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX };

/** GET /v1/resources: one page, newest first, in the list envelope. */
export const listResources: Operation = {
  method: "GET",
  path: "/v1/resources",
  params: ["limit", "starting_after", "ending_before", "status"],
  summary: "List resources",
  scope: "resources:read",
  async handle({ params, tenant, core, call }) {
    const limit = optionalInteger(params, "limit", { min: 1, max: LIST_LIMIT_MAX }, "limit_invalid") ?? LIST_LIMIT_DEFAULT;
    const startingAfter = optionalString(params, "starting_after") ?? "";
    // Both cursors at once, and malformed cursors, are core's to refuse (one rule, one place).
    const endingBefore = optionalString(params, "ending_before") ?? "";
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const page = await core.resources.listResources({ tenant, limit, startingAfter, endingBefore, status: statusToProto(status) }, call);
    return {
      status: 200,
      body: { object: "list", url: "/v1/resources", has_more: page.hasMore, data: page.resources.map(renderResource) },
    };
  },
};
