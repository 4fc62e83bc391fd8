import { IDEMPOTENCY_KEY_METADATA, REQUEST_ID_METADATA, type CallContext } from "@rms/proto";
import type { RequestInfo } from "../resources/store.js";

function first(context: CallContext, key: string): string | null {
  const value = context.metadata.get(key)[0];
  return typeof value === "string" && value !== "" ? value : null;
}

/** The request id and idempotency key the caller passed, recorded with events. */
export function requestInfo(context: CallContext): RequestInfo {
  return { requestId: first(context, REQUEST_ID_METADATA), idempotencyKey: first(context, IDEMPOTENCY_KEY_METADATA) };
}

export function requestId(context: CallContext): string | null {
  return first(context, REQUEST_ID_METADATA);
}
