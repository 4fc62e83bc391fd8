import { EventService } from "@rms/proto";
import { OPERATOR_AND_GATEWAY as both, serviceDomain } from "../domain.js";
import { EventLog } from "./log.js";
import { eventService } from "./service.js";
import { EventStore } from "./store.js";

/** Events: one per committed change, copied out of the objects' outboxes by the relay (CONTRACT.md section 7, in ../shared/docs/). */
export const eventsDomain = serviceDomain({
  name: "events",
  service: EventService,
  callers: { getEvent: both, listEvents: both, readEventLog: both, watchEvents: both },
  open({ db, checkKey }) {
    const store = new EventStore(db);
    return { indexes: store, implementation: eventService(store, new EventLog(db), checkKey) };
  },
});
