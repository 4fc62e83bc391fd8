import type { CallContext } from "@rms/proto";
import type { RequestInfo } from "../resources/store.js";

/** Metadata keys internal callers may send with any call. */
export const REQUEST_ID_KEY = "rms-request-id";
export const IDEMPOTENCY_KEY = "idempotency-key";

function first(context: CallContext, key: string): string | null {
  const value = context.metadata.get(key)[0];
  return typeof value === "string" && value !== "" ? value : null;
}

/** The request id and idempotency key the caller passed, recorded with events. */
export function requestInfo(context: CallContext): RequestInfo {
  return { requestId: first(context, REQUEST_ID_KEY), idempotencyKey: first(context, IDEMPOTENCY_KEY) };
}

export function requestId(context: CallContext): string | null {
  return first(context, REQUEST_ID_KEY);
}
