import type { Operation } from "../operation.js";
import { createResource } from "./create.js";
import { deleteResource } from "./delete.js";
import { listResources } from "./list.js";
import { retrieveResource } from "./retrieve.js";
import { updateResource } from "./update.js";

/** Every public operation on resources. */
export const RESOURCE_OPERATIONS: readonly Operation[] = [listResources, createResource, retrieveResource, updateResource, deleteResource];
