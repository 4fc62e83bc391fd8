import { optionalEnum, optionalMetadata, optionalString } from "../../parsing/params.js";
import { metadataParam } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { RESOURCE_ID_PATH, RESOURCE_PARAMS, ResourceObject, STATUS_NAMES, statusToProto } from "./objects.js";

/** POST /v1/resources/:id: merges the given fields, 200 with the full resource. */
export const updateResource = defineOperation({
  method: "POST",
  path: "/v1/resources/:id",
  summary: "Update a resource",
  scope: "resources:write",
  pathParameters: RESOURCE_ID_PATH,
  parameters: { name: RESOURCE_PARAMS.name, status: RESOURCE_PARAMS.status, metadata: metadataParam(true) },
  success: { status: 200, description: "The updated resource.", object: ResourceObject },
  errors: ["resource_missing", "parameter_invalid", "parameter_invalid_empty", "string_too_long", "metadata_invalid"],
  service: "resources",
  rpc: "updateResource",
  request({ params, path, tenant }) {
    const name = optionalString(params, "name");
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const metadata = optionalMetadata(params);
    return {
      tenant,
      id: path["id"] ?? "",
      ...(name !== undefined ? { name } : {}),
      status: statusToProto(status),
      metadata: metadata?.entries ?? [],
      clearMetadata: metadata?.clear ?? false,
    };
  },
  reply: ({ resource }) => resource,
});
