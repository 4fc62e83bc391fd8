import type { EventPayload, KeylessRoute, Operation } from "../engine/operation.js";
import { ACCOUNT_OPERATIONS } from "./account/index.js";
import { API_KEY_OPERATIONS } from "./api-keys/index.js";
import { DASHBOARD_SESSION_OPERATIONS } from "./dashboard-sessions/index.js";
import { EVENT_OPERATIONS } from "./events/index.js";
import { EventObject } from "./events/objects.js";
import { FILE_OPERATIONS } from "./files/index.js";
import { JOB_EVENTS, JOB_OPERATIONS } from "./jobs/index.js";
import { REQUEST_LOG_OPERATIONS } from "./request-logs/index.js";
import { RESOURCE_EVENTS, RESOURCE_OPERATIONS } from "./resources/index.js";
import { statusRoute } from "./status.js";
import { WEBHOOK_ENDPOINT_EVENTS, WEBHOOK_ENDPOINT_OPERATIONS } from "./webhook-endpoints/index.js";

/** Every authenticated public operation, one line per object kind. */
export const OPERATIONS: readonly Operation[] = [
  ...RESOURCE_OPERATIONS,
  ...EVENT_OPERATIONS,
  ...JOB_OPERATIONS,
  ...WEBHOOK_ENDPOINT_OPERATIONS,
  ...FILE_OPERATIONS,
  ...REQUEST_LOG_OPERATIONS,
  ...DASHBOARD_SESSION_OPERATIONS,
  ...ACCOUNT_OPERATIONS,
  ...API_KEY_OPERATIONS,
];

/** Paths served without a key, besides the API description itself. */
export const KEYLESS_ROUTES: readonly KeylessRoute[] = [statusRoute];

/** Every event type's webhook payload, one line per object kind that announces events (the API document's `webhooks`). */
export const EVENT_PAYLOADS: readonly EventPayload[] = [...RESOURCE_EVENTS, ...JOB_EVENTS, ...WEBHOOK_ENDPOINT_EVENTS];

/** The event object every webhook delivers (each type's payload narrows its `type` and `data`). */
export const EVENT_OBJECT = EventObject;
