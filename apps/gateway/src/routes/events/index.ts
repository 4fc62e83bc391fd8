import type { Operation } from "../../engine/operation.js";
import { listEvents } from "./list.js";
import { retrieveEvent } from "./retrieve.js";
import { streamEvents } from "./stream.js";

/** Every public operation on events; the stream's fixed path before the retrieve's `:id`. */
export const EVENT_OPERATIONS: readonly Operation[] = [listEvents, streamEvents, retrieveEvent];
