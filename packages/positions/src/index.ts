// The whole public face of @rms/positions (docs/streams.md, "Order and resume").
export {
  POSITION_FIELD,
  ensurePositionIndex,
  insertPositioned,
  insertPositionedIn,
  tenantKey,
  type PositionCounter,
  type PositionedCollections,
  type Tenanted,
} from "./positioned-insert.js";
export { STREAM_READ_CONCERN, clusterTimeNow, clusterTimeOf, readCausally, timestampOf } from "./cluster-time.js";
export { ResumeTokenLost, WATCH_HEARTBEAT_MS, watchPositioned, type WatchMessage } from "./watch.js";
