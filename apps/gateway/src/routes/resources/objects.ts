import { RESOURCE_STATUS, ResourceStatus, type Resource, type ResourceStatusName } from "@rms/proto";
import { ApiError } from "../../errors.js";
import { constant, deletedOf, field, listOf, publicObject } from "../../schema/objects.js";
import { LIST_LIMIT_MAX, METADATA_OBJECT } from "../../schema/params.js";
import type { ParamSpec } from "../operation.js";

export const STATUS_NAMES = RESOURCE_STATUS.names;
export type StatusName = ResourceStatusName;

/** A public status name as the proto enum; absent means UNSPECIFIED (default / unchanged / no filter). */
export function statusToProto(status: StatusName | undefined): ResourceStatus {
  return status === undefined ? ResourceStatus.UNSPECIFIED : RESOURCE_STATUS.valueOf(status);
}

/** A resource id: `res_` and an opaque suffix (no anchors, for use inside other patterns). */
export const RESOURCE_ID_PATTERN = "res_[0-9A-Za-z]{22}";
/** A well-formed resource id (of no resource). */
export const EXAMPLE_RESOURCE_ID = "res_0000000000000000000000";
const RESOURCE_ID = { type: "string", pattern: `^${RESOURCE_ID_PATTERN}$`, description: "A resource id: `res_` and an opaque suffix." };
const STATUS = { type: "string", enum: [...STATUS_NAMES] };

/** The public resource object: exactly six fields in contract order, metadata always an object. */
export const ResourceObject = publicObject<Resource>("Resource", {
  id: field(RESOURCE_ID, (r) => r.id),
  object: constant("resource"),
  name: field({ type: "string", minLength: 1, maxLength: 200 }, (r) => r.name),
  status: field(STATUS, (r) => RESOURCE_STATUS.nameOf(r.status) ?? fail()),
  metadata: field(METADATA_OBJECT, (r) => {
    // Null prototype: a key such as "__proto__" is an own property, serialized verbatim.
    const metadata = Object.create(null) as Record<string, string>;
    for (const { key, value } of r.metadata) metadata[key] = value;
    return metadata;
  }),
  created: field({ type: "integer", description: "Unix seconds." }, (r) => Number(r.created)),
});

export const ResourceListObject = listOf(ResourceObject, "/v1/resources", LIST_LIMIT_MAX);
export const DeletedResourceObject = deletedOf(ResourceObject, "resource", RESOURCE_ID);

function fail(): never {
  throw ApiError.internal();
}

/** Parameters shared by several resource operations. */
export const RESOURCE_PARAMS = {
  name: { example: "Staging cluster", schema: { type: "string", minLength: 1, maxLength: 200, description: "1 to 200 characters (Unicode code points), kept as given." } },
  status: { example: "paused", schema: { ...STATUS, description: "`active` (default on create), `paused` or `archived`." } },
} satisfies Record<string, ParamSpec>;

/** The `:id` of `/v1/resources/:id`. */
export const RESOURCE_ID_PATH = { id: { example: EXAMPLE_RESOURCE_ID, schema: { type: "string", description: "The resource id." } } } satisfies Record<string, ParamSpec>;
