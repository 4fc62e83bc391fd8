import { defineOperation } from "../../engine/operation.js";
import { DeletedResourceObject, RESOURCE_ID_PATH } from "./objects.js";

/** DELETE /v1/resources/:id: 200 with the deletion result. */
export const deleteResource = defineOperation({
  method: "DELETE",
  path: "/v1/resources/:id",
  summary: "Delete a resource",
  scope: "resources:write",
  pathParameters: RESOURCE_ID_PATH,
  success: { status: 200, description: "The deletion result.", object: DeletedResourceObject },
  errors: ["resource_missing"],
  service: "resources",
  rpc: "deleteResource",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ id }) => ({ id }),
});
