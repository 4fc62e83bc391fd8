/**
 * What the bench measures of the gateway without the stack around it, as `@rms/gateway/bench` (bench/src/request-logs-write.mjs:
 * the cost of one request log). No production code imports it; it is not the API of the gateway (which is `index.ts`).
 */
export { keep, redact } from "./request-logs/redact.js";
export { RequestLogStore } from "./request-logs/store.js";
export { gatewayMongoClient } from "./stores.js";
