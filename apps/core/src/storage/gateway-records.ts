import { GATEWAY_IDEMPOTENCY_COLLECTION, IDEMPOTENCY_RETENTION_MS } from "@rms/proto";
import type { Db } from "mongodb";

/** The fields of a gateway record this read needs (the gateway owns the rest; apps/gateway/src/idempotency/). */
interface GatewayRecord {
  _id: string;
  created: Date;
  expires_at?: Date;
}

/**
 * Whether the gateway holds a live record of a key (`scope`: `<account>/<mode>/<key>`): a request of another
 * operation used the key, or a create answered before answers were recorded in the key's slot. Such a key is
 * decided by the gateway's record, so a create must not record an answer of its own under it. A record past its
 * `expires_at` counts as absent, as the gateway counts it. One read by `_id`.
 */
export async function gatewayHoldsKey(db: Db, scope: string, nowMs: number, options: { timeoutMS?: number } = {}): Promise<boolean> {
  const record = await db.collection<GatewayRecord>(GATEWAY_IDEMPOTENCY_COLLECTION).findOne({ _id: scope }, { projection: { created: 1, expires_at: 1 }, ...options });
  if (!record) return false;
  return (record.expires_at?.getTime() ?? record.created.getTime() + IDEMPOTENCY_RETENTION_MS) >= nowMs;
}
