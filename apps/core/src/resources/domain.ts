import { ResourceService, file_rms_v1_resources } from "@rms/proto";
import { implement, serviceEntry, type Domain } from "../domain.js";
import { resourceService } from "./service.js";
import { RESOURCES_COLLECTION, ResourceStore } from "./store.js";

const both = ["admin", "gateway"] as const;

/** Resources: the primary unit of data (CONTRACT.md section 4, in ../shared/docs/). */
export const resourcesDomain: Domain = {
  name: "resources",
  files: [file_rms_v1_resources],
  services: [
    serviceEntry(ResourceService, {
      createResource: both,
      getResource: both,
      updateResource: both,
      deleteResource: both,
      listResources: both,
      searchResources: both,
    }),
  ],
  outboxes: [RESOURCES_COLLECTION],
  open({ db, faults, checkKey, written }) {
    const store = new ResourceStore(db, written);
    return {
      ensureIndexes: () => store.ensureIndexes(),
      implementations: [implement(ResourceService, resourceService(store, faults, checkKey))],
    };
  },
};
