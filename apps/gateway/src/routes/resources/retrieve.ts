import { defineOperation } from "../../engine/operation.js";
import { RESOURCE_ID_PATH, ResourceObject } from "./objects.js";

/** GET /v1/resources/:id */
export const retrieveResource = defineOperation({
  method: "GET",
  path: "/v1/resources/:id",
  summary: "Retrieve a resource",
  scope: "resources:read",
  pathParameters: RESOURCE_ID_PATH,
  success: { status: 200, description: "The resource.", object: ResourceObject },
  errors: ["resource_missing"],
  service: "resources",
  rpc: "getResource",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ resource }) => resource,
});
