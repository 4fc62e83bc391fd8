import type { Operation } from "../../engine/operation.js";
import { listRequestLogs } from "./list.js";
import { retrieveRequestLog } from "./retrieve.js";
import { streamRequestLogs } from "./stream.js";

/** Every public operation on request logs; the stream's fixed path before the retrieve's `:id`. */
export const REQUEST_LOG_OPERATIONS: readonly Operation[] = [listRequestLogs, streamRequestLogs, retrieveRequestLog];
