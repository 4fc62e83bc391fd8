import { exampleId, metadataMap, RESOURCE_NAME_MAX, RESOURCE_STATUS, ResourceStatus, type Resource, type ResourceStatusName } from "@rms/proto";
import { ApiError } from "../../errors.js";
import { constant, deletedOf, field, listOf, publicObject, type Page } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX, METADATA_OBJECT } from "../../schema/params.js";
import type { ParamSpec } from "../../engine/operation.js";

export const STATUS_NAMES = RESOURCE_STATUS.names;
export type StatusName = ResourceStatusName;

/** A public status name as the proto enum; absent means UNSPECIFIED (default / unchanged / no filter). */
export function statusToProto(status: StatusName | undefined): ResourceStatus {
  return status === undefined ? ResourceStatus.UNSPECIFIED : RESOURCE_STATUS.valueOf(status);
}

const RESOURCE_ID = idSchema("res", "A resource id: `res_` and an opaque suffix.");
const STATUS = { type: "string", enum: [...STATUS_NAMES] };

/** The public resource object: exactly six fields in contract order, metadata always an object. */
export const ResourceObject = publicObject<Resource>("Resource", {
  id: field(RESOURCE_ID, (r) => r.id),
  object: constant("resource"),
  name: field({ type: "string", minLength: 1, maxLength: RESOURCE_NAME_MAX }, (r) => r.name),
  status: field(STATUS, (r) => RESOURCE_STATUS.nameOf(r.status) ?? fail()),
  metadata: field(METADATA_OBJECT, (r) => metadataMap(r.metadata.map((e) => [e.key, e.value]))),
  created: field({ type: "integer", description: "Unix seconds." }, (r) => Number(r.created)),
});

export const ResourceListObject = listOf(ResourceObject, "/v1/resources", LIST_LIMIT_MAX);

/**
 * A page of core's list or search answer. Asked with `as_json`, core answers the objects as JSON text (`data_json`,
 * sent on as it is; an empty page's text is "[]").
 */
export function pageOf(answer: { readonly dataJson: string }, hasMore: boolean): Page<Resource> {
  return { items: [], hasMore, itemsJson: answer.dataJson };
}
export const DeletedResourceObject = deletedOf(ResourceObject, "resource", RESOURCE_ID);

function fail(): never {
  throw ApiError.internal();
}

/** Parameters shared by several resource operations. */
export const RESOURCE_PARAMS = {
  name: {
    example: "Staging cluster",
    schema: {
      type: "string",
      minLength: 1,
      maxLength: RESOURCE_NAME_MAX,
      description: `1 to ${RESOURCE_NAME_MAX} characters (Unicode code points), kept as given.`,
    },
  },
  status: { example: "paused", schema: { ...STATUS, description: "`active` (default on create), `paused` or `archived`." } },
} satisfies Record<string, ParamSpec>;

/** The `:id` of `/v1/resources/:id`. */
export const RESOURCE_ID_PATH = { id: { example: exampleId("res"), schema: { type: "string", description: "The resource id." } } } satisfies Record<
  string,
  ParamSpec
>;
