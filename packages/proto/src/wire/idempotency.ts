/**
 * How long an Idempotency-Key stays bound (CONTRACT.md section 5, in ../shared/docs/): core keeps the key's
 * record (and the object the key created stays bound to it) this long after first use.
 */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Where an Idempotency-Key applies: keys are per account and mode. `<account>/<live|test>/<key>`
 * names it in core's idempotency records and in the objects a keyed request created.
 */
export function idempotencyScopeId(accountId: string, livemode: boolean, key: string): string {
  return `${accountId}/${livemode ? "live" : "test"}/${key}`;
}
