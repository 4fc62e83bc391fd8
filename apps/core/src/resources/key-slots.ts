import type { Db } from "mongodb";
import { errors } from "../errors.js";
import { answerRequest, requestInfo } from "../grpc/call-info.js";
import type { PresentedKeyCheck } from "../grpc/define-rpc.js";
import { ResourceStore } from "./store.js";

/**
 * The presented-key check of every call, plus, for a call the gateway makes under an Idempotency-Key from its own
 * record path (its fingerprint, no answer headers: any POST but the resource create), a read of the key's slot
 * among resources, alongside the key's read: a create recorded its answer there (create.ts) for another request,
 * so this one is `idempotency_key_reused`, as the gateway's record would have said (docs/idempotency-and-limits.md).
 */
export function withCreateKeySlots(checkKey: PresentedKeyCheck, db: Db): PresentedKeyCheck {
  const resources = new ResourceStore(db);
  return async (context, tenant, options = {}) => {
    const asked = answerRequest(context);
    const key = requestInfo(context).idempotencyKey;
    if (asked === null || asked.headers !== null || key === null) return checkKey(context, tenant, options);
    const [, held] = await Promise.all([checkKey(context, tenant, options), resources.keyHeldByOtherRequest(tenant, key, asked.fingerprint, options)]);
    if (held) throw errors.of("idempotency_key_reused");
  };
}
