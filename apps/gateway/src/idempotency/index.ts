export { requestFingerprint, canonicalJson } from "./fingerprint.js";
export * from "./store.js";
export {
  answerHeaders,
  idempotencyKeyOf,
  recordedHeaders,
  replayTrailerOf,
  sendRefusalReplay,
  sendReplay,
  PER_REQUEST_HEADERS,
  REPLAYED_HEADER,
  ORIGINAL_REQUEST_HEADER,
} from "./replay.js";
