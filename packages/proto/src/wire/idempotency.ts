/**
 * How long an Idempotency-Key stays bound (CONTRACT.md section 5, in ../shared/docs/): the gateway keeps the
 * recorded response, and core the object the key created, this long after first use.
 */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Where an Idempotency-Key applies: keys are per account and mode. `<account>/<live|test>/<key>`
 * names it in the gateway's records and in core's created objects alike.
 */
export function idempotencyScopeId(accountId: string, livemode: boolean, key: string): string {
  return `${accountId}/${livemode ? "live" : "test"}/${key}`;
}

/**
 * The gateway's idempotency records (one per account + mode + key, `_id` = `idempotencyScopeId`). Core reads one by
 * `_id` before it records a create's answer under a key itself: a key the gateway holds a record of (another
 * operation used it) is decided by that record (docs/idempotency-and-limits.md).
 */
export const GATEWAY_IDEMPOTENCY_COLLECTION = "idempotency_keys";
