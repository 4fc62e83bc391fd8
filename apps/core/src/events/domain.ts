import { EventService, file_rms_v1_events } from "@rms/proto";
import { implement, serviceEntry, type Domain } from "../domain.js";
import { eventService } from "./service.js";
import { EventStore } from "./store.js";

const both = ["admin", "gateway"] as const;

/** Events: one per committed change, copied out of the objects' outboxes by the relay (CONTRACT.md section 7, in ../shared/docs/). */
export const eventsDomain: Domain = {
  name: "events",
  files: [file_rms_v1_events],
  services: [serviceEntry(EventService, { getEvent: both, listEvents: both })],
  open({ db, checkKey }) {
    const store = new EventStore(db);
    return {
      ensureIndexes: () => store.ensureIndexes(),
      implementations: [implement(EventService, eventService(store, checkKey))],
    };
  },
};
