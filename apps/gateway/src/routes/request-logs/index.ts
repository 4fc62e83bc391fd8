import type { Operation } from "../operation.js";
import { listRequestLogs } from "./list.js";
import { retrieveRequestLog } from "./retrieve.js";

export const REQUEST_LOG_OPERATIONS: readonly Operation[] = [listRequestLogs, retrieveRequestLog];
