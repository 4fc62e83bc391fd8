import { ResourceStatus } from "../gen/rms/v1/resources_pb.js";
import { nameMap } from "./name-map.js";
import type { Vocabulary } from "./vocabulary.js";

/** Resources (CONTRACT.md section 3, in ../shared/docs/). */
export const RESOURCES_VOCABULARY = {
  domain: "resources",
  idPrefixes: ["res"],
  eventTypes: ["resource.created", "resource.updated", "resource.deleted"],
  scopes: ["resources:read", "resources:write"],
} as const satisfies Vocabulary;

/** Resource statuses as the API names them. */
export const RESOURCE_STATUS = nameMap({ active: ResourceStatus.ACTIVE, paused: ResourceStatus.PAUSED, archived: ResourceStatus.ARCHIVED });
export type ResourceStatusName = (typeof RESOURCE_STATUS.names)[number];

/** A resource's `name`: 1 to this many characters (Unicode code points), surrounding whitespace kept. */
export const RESOURCE_NAME_MAX = 200;
