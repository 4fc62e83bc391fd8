import { createHash } from "node:crypto";
import { IDEMPOTENCY_RETENTION_MS, idempotencyScopeId, isDuplicateKeyError } from "@rms/proto";
import type { Collection, Filter, OptionalUnlessRequiredId } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { WITHOUT_OUTBOX, type Loaded } from "./documents.js";
import { writeWithin } from "./write.js";

/** How long an Idempotency-Key stays bound to the object it created (CONTRACT.md section 5, in ../shared/docs/; one constant with the idempotency records). */
export { IDEMPOTENCY_RETENTION_MS };

/**
 * The fields an idempotently created document carries (ARCHITECTURE data rule 3, in ../shared/docs/).
 * `idempotency`: `<account>/<mode>/<key>` of the creating request, or the document's own id when the
 * request had no key, so the unique index never sees two equal values. `request_hash`: the
 * creating request's fingerprint, so a different request under the same key is refused.
 */
export interface IdempotentDocument {
  _id: string;
  /** Unix seconds: the key's 24 hours count from here. */
  created: number;
  idempotency: string;
  request_hash: string | null;
}

/** The document as reads load it (without its outbox), whether just made or found. */
export type InsertOnceResult<D> = { doc: Loaded<D>; replayed: boolean } | { conflict: true };

/** A create request under its key, as insertOnce and recordRefusal compare it with the key's first one. */
export interface KeyedRequest {
  tenant: Tenant;
  key: string | null;
  /** The store's own fingerprint of the fields (`fingerprint`). */
  fingerprint: string;
}

/** The unique index that makes one document per key a fact of the database, whatever process crashes when. */
export async function ensureIdempotencyIndex<D extends IdempotentDocument>(collection: Collection<D>): Promise<void> {
  await collection.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
}

export function idempotencyScope(tenant: Tenant, key: string): string {
  return idempotencyScopeId(tenant.account, tenant.livemode, key);
}

/** A stable fingerprint of a create request's fields (any JSON value: the same value, the same text). */
export function fingerprint(fields: unknown): string {
  return createHash("sha256").update(JSON.stringify(fields)).digest("base64url");
}

/** Whether the key's binding to `first` still holds at `nowMs` (24 h from its creation). */
export function keyStillBound(first: Pick<IdempotentDocument, "created">, nowMs: number): boolean {
  return first.created * 1000 + IDEMPOTENCY_RETENTION_MS > nowMs;
}

/**
 * Inserts `doc` at most once per idempotency key: when the key was used within its
 * retention window, the first document is returned (`replayed`), or `conflict` when that
 * first request was a different one (its fingerprint differs). Once the window is over the
 * key is released from the old document and the insert is made anew. Without a key it is
 * a plain insert.
 */
export async function insertOnce<D extends IdempotentDocument>(
  collection: Collection<D>,
  doc: Omit<D, "idempotency" | "request_hash">,
  request: KeyedRequest,
  budget: Budget = UNBOUNDED,
  now: () => number = Date.now,
): Promise<InsertOnceResult<D>> {
  const key = request.key;
  const full = {
    ...doc,
    idempotency: key ? idempotencyScope(request.tenant, key) : doc._id,
    request_hash: key ? request.fingerprint : null,
  } as D;
  return claimSlot(collection, full, request, budget, now, () => {
    const { pending_events: _outbox, ...loaded } = full as D & { pending_events?: unknown };
    return { doc: loaded as Loaded<D>, replayed: false };
  });
}

async function claimSlot<D extends IdempotentDocument, R>(
  collection: Collection<D>,
  full: D,
  request: KeyedRequest,
  budget: Budget,
  now: () => number,
  inserted: () => R,
): Promise<R | InsertOnceResult<D>> {
  for (let attempt = 0; ; attempt++) {
    try {
      await writeWithin(budget, (options) => collection.insertOne(full as OptionalUnlessRequiredId<D>, options));
      return inserted();
    } catch (error) {
      if (!request.key || !isDuplicateKeyError(error) || attempt > 2) throw error;
      const bySlot = { idempotency: full.idempotency } as Filter<D>;
      const first = (await collection.findOne(bySlot, { ...WITHOUT_OUTBOX, ...budget.db() })) as Loaded<D> | null;
      if (!first) continue; // removed since (released, expired): insert again
      if (keyStillBound(first, now())) {
        return first.request_hash === request.fingerprint ? { doc: first, replayed: true } : { conflict: true };
      }
      // The key's window is over: release it from the old document (its own id takes the slot), then insert anew.
      await writeWithin(budget, (options) =>
        collection.updateOne({ _id: first._id, idempotency: full.idempotency } as Filter<D>, { $set: { idempotency: first._id } } as never, options),
      );
    }
  }
}
