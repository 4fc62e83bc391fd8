export { requestFingerprint, canonicalJson } from "./fingerprint.js";
export { sendUnderKey, type KeyedCall } from "./keyed-call.js";
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
  type RecordedHeader,
  type RecordedResponse,
} from "./replay.js";
