export { IdempotentRequest, IdempotentReplay } from "./request.js";
export { MongoIdempotencyStore, IDEMPOTENCY_COLLECTION } from "./mongo-store.js";
export { requestFingerprint, canonicalJson } from "./fingerprint.js";
export * from "./store.js";
export { runOperation, REPLAYED_HEADER, ORIGINAL_REQUEST_HEADER } from "./respond.js";
