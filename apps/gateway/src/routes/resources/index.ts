import type { Operation } from "../operation.js";
import { createResource } from "./create.js";
import { deleteResource } from "./delete.js";
import { listResources } from "./list.js";
import { retrieveResource } from "./retrieve.js";
import { searchResources } from "./search.js";
import { updateResource } from "./update.js";

/** Every public operation on resources (search before `/v1/resources/:id`, which would otherwise take its path). */
export const RESOURCE_OPERATIONS: readonly Operation[] = [listResources, createResource, searchResources, retrieveResource, updateResource, deleteResource];
