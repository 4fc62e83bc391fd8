import type { EventPayload, Operation } from "../../engine/operation.js";
import { ResourceObject } from "./objects.js";
import { createResource } from "./create.js";
import { deleteResource } from "./delete.js";
import { listResources } from "./list.js";
import { retrieveResource } from "./retrieve.js";
import { searchResources } from "./search.js";
import { updateResource } from "./update.js";

/** Every public operation on resources (search before `/v1/resources/:id`, which would otherwise take its path). */
export const RESOURCE_OPERATIONS: readonly Operation[] = [listResources, createResource, searchResources, retrieveResource, updateResource, deleteResource];

/** The events of a resource's changes, as webhooks deliver them. */
export const RESOURCE_EVENTS: readonly EventPayload[] = [
  { type: "resource.created", summary: "A resource was created (by the API or an import job).", object: ResourceObject },
  {
    type: "resource.updated",
    summary: "A resource was changed; `previous_attributes` holds the old values of the changed fields only.",
    object: ResourceObject,
    previousAttributes: true,
  },
  { type: "resource.deleted", summary: "A resource was deleted; `data.object` is the resource as it was.", object: ResourceObject },
];
