import type { Operation } from "../operation.js";
import { listEvents } from "./list.js";
import { retrieveEvent } from "./retrieve.js";

/** Every public operation on events. */
export const EVENT_OPERATIONS: readonly Operation[] = [listEvents, retrieveEvent];
