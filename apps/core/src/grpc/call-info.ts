import { IDEMPOTENCY_KEY_METADATA, REQUEST_ID_METADATA, type CallContext, type Tenant as TenantMessage } from "@rms/proto";
import type { RequestInfo, Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { refuseOutsideScope } from "../clients/tenant-scope.js";

/** The value a caller sent under a metadata key; null when it sent none, or an empty one. */
export function metadataValue(context: CallContext, key: string): string | null {
  const value = context.metadata.get(key)[0];
  return typeof value === "string" && value !== "" ? value : null;
}

/** The request id and idempotency key the caller passed, recorded with events. */
export function requestInfo(context: CallContext): RequestInfo {
  return { requestId: metadataValue(context, REQUEST_ID_METADATA), idempotencyKey: metadataValue(context, IDEMPOTENCY_KEY_METADATA) };
}

export function requestId(context: CallContext): string | null {
  return metadataValue(context, REQUEST_ID_METADATA);
}

/**
 * The tenant a tenant-scoped request names; every such request must name one, and one the calling client may act on
 * (else it answers as if `named`, the object the request names by `id`, or the account did not exist).
 */
export function tenantOf(context: CallContext, message: TenantMessage | undefined, named?: unknown): Tenant {
  if (!message?.accountId) throw errors.invalid("parameter_missing", "Missing required param: tenant.", "tenant");
  const tenant = { account: message.accountId, livemode: message.livemode };
  refuseOutsideScope(context, tenant, named);
  return tenant;
}
