import { optionalEnum, optionalMetadata, requiredString } from "../../parsing/params.js";
import { metadataParam } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { RESOURCE_PARAMS, ResourceObject, STATUS_NAMES, statusToProto } from "./objects.js";

/** POST /v1/resources: 201 with the new resource. */
export const createResource = defineOperation({
  method: "POST",
  path: "/v1/resources",
  summary: "Create a resource",
  scope: "resources:write",
  parameters: { name: { ...RESOURCE_PARAMS.name, required: true }, status: RESOURCE_PARAMS.status, metadata: metadataParam(false) },
  success: { status: 201, description: "The created resource.", object: ResourceObject },
  errors: ["parameter_missing", "parameter_invalid", "parameter_invalid_empty", "string_too_long", "metadata_invalid"],
  service: "resources",
  rpc: "createResource",
  request({ params, tenant }) {
    const name = requiredString(params, "name");
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const metadata = optionalMetadata(params);
    return { tenant, name, status: statusToProto(status), metadata: metadata?.entries ?? [] };
  },
  reply: ({ resource }) => resource,
});
