import { RESOURCE_STATUS, ResourceStatus, type Resource, type ResourceStatusName } from "@rms/proto";
import { ApiError } from "../errors.js";

export const STATUS_NAMES = RESOURCE_STATUS.names;
export type StatusName = ResourceStatusName;

/** A public status name as the proto enum; absent means UNSPECIFIED (default / unchanged / no filter). */
export function statusToProto(status: StatusName | undefined): ResourceStatus {
  return status === undefined ? ResourceStatus.UNSPECIFIED : RESOURCE_STATUS.valueOf(status);
}

/** The public resource object: exactly six fields in contract order, metadata always an object. */
export interface ResourceJson {
  id: string;
  object: "resource";
  name: string;
  status: StatusName;
  metadata: Record<string, string>;
  created: number;
}

export function renderResource(resource: Resource | undefined): ResourceJson {
  const status = resource && RESOURCE_STATUS.nameOf(resource.status);
  if (!resource || !status) throw ApiError.internal();
  // Null prototype: a key such as "__proto__" is an own property, serialized verbatim.
  const metadata = Object.create(null) as Record<string, string>;
  for (const { key, value } of resource.metadata) metadata[key] = value;
  return { id: resource.id, object: "resource", name: resource.name, status, metadata, created: Number(resource.created) };
}
