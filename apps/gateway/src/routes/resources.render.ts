import { ResourceStatus, type Resource } from "@rms/proto";
import { ApiError } from "../errors.js";

export const STATUS_NAMES = ["active", "paused", "archived"] as const;
export type StatusName = (typeof STATUS_NAMES)[number];

const TO_PROTO: Record<StatusName, ResourceStatus> = {
  active: ResourceStatus.ACTIVE,
  paused: ResourceStatus.PAUSED,
  archived: ResourceStatus.ARCHIVED,
};
const FROM_PROTO: Partial<Record<ResourceStatus, StatusName>> = {
  [ResourceStatus.ACTIVE]: "active",
  [ResourceStatus.PAUSED]: "paused",
  [ResourceStatus.ARCHIVED]: "archived",
};

/** A public status name as the proto enum; absent means UNSPECIFIED (default / unchanged / no filter). */
export function statusToProto(status: StatusName | undefined): ResourceStatus {
  return status === undefined ? ResourceStatus.UNSPECIFIED : TO_PROTO[status];
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
  const status = resource && FROM_PROTO[resource.status];
  if (!resource || !status) throw ApiError.internal();
  // Null prototype: a key such as "__proto__" is an own property, serialized verbatim.
  const metadata = Object.create(null) as Record<string, string>;
  for (const { key, value } of resource.metadata) metadata[key] = value;
  return { id: resource.id, object: "resource", name: resource.name, status, metadata, created: Number(resource.created) };
}
