import { AdminService, type AnyService } from "@rms/proto";

// Core's services by namespace, one table with the gateway's (@rms/proto).
export { CORE_SERVICES, type CoreServiceName } from "@rms/proto";

type Method = AnyService["methods"][number];

/**
 * A call that changes nothing: safe to repeat as it is. Core's methods say so by their verb; every other unary call
 * is a write.
 */
export function isRead(method: Method): boolean {
  return /^(Get|List|Search|Read|Verify)[A-Z]/.test(method.name);
}

/**
 * A write core runs exactly once under an `idempotency-key`: every write of the tenant services (their declared
 * RPCs). The operator's AdminService keeps no such records: its writes (an account, a key) are sent once and never
 * repeated, since a repeat would make a second one.
 */
export function isKeyedWrite(method: Method): boolean {
  return method.methodKind === "unary" && !isRead(method) && method.parent.typeName !== AdminService.typeName;
}

/** What the client repeats on UNAVAILABLE: unary reads, and the writes it sends under a key. */
export function isRetried(method: Method): boolean {
  return method.methodKind === "unary" && (isRead(method) || isKeyedWrite(method));
}
