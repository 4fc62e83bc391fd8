import { ResourceService } from "@rms/proto";
import { OPERATOR_AND_GATEWAY as both, serviceDomain } from "../domain.js";
import { resourceService } from "./service.js";
import { RESOURCES_COLLECTION, ResourceStore } from "./store.js";

/** Resources: the primary unit of data (CONTRACT.md section 4, in ../shared/docs/). */
export const resourcesDomain = serviceDomain({
  name: "resources",
  service: ResourceService,
  callers: { createResource: both, getResource: both, updateResource: both, deleteResource: both, listResources: both, searchResources: both },
  outboxes: [RESOURCES_COLLECTION],
  open({ db, faults, checkKey, written }) {
    const store = new ResourceStore(db, written);
    return { indexes: store, implementation: resourceService(store, faults, checkKey) };
  },
});
