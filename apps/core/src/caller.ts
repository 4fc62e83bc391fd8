/**
 * On whose behalf a call acts and what request it carries: plain values made from a call's
 * message and metadata (grpc/call-info.ts) and handed to the storage mechanisms (storage/).
 * Every domain uses them; none owns them.
 */

/** One account's data in one mode: every tenant-owned document carries both. */
export interface Tenant {
  account: string;
  livemode: boolean;
}

/** Who asked, recorded in the events a write records. */
export interface RequestInfo {
  requestId: string | null;
  idempotencyKey: string | null;
}
