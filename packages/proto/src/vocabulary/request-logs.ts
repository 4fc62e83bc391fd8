import type { Vocabulary } from "./vocabulary.js";

/**
 * Request logs (CONTRACT.md section 12, in ../shared/docs/): the gateway records and serves them from its own
 * store (docs/request-logs.md); their ids are the requests' `Request-Id`s (`req_`, made by `newRequestId`).
 */
export const REQUEST_LOGS_VOCABULARY = {
  domain: "request_logs",
  servedBy: "gateway",
  idPrefixes: [],
  eventTypes: [],
  scopes: ["request_logs:read"],
} as const satisfies Vocabulary;
