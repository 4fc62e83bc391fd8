import { createHash } from "node:crypto";
import { IDEMPOTENCY_RETENTION_MS, idempotencyScopeId, isDuplicateKeyError } from "@rms/proto";
import type { Collection, Filter, OptionalUnlessRequiredId } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
import { WITHOUT_OUTBOX, type Loaded } from "./documents.js";
import { EXPIRES_AT, expiryAt } from "./expiry.js";
import { writeWithin } from "./write.js";

/** How long an Idempotency-Key stays bound to the object it created (CONTRACT.md section 5, in ../shared/docs/; one constant with the gateway's records). */
export { IDEMPOTENCY_RETENTION_MS };

/**
 * The answer a create gave, recorded with its document under the key's unique index when the caller asked for it
 * (the gateway's `rms-request-fingerprint` and `rms-answer-headers`), so that a repeat gets that first answer back
 * with no record of the caller's own (docs/idempotency-and-limits.md, "The create's answer in the key's slot").
 */
export interface RecordedAnswer {
  /** The caller's fingerprint of the request (the gateway's: method, path, RPC and message); decides "same request". */
  fingerprint: string;
  /** The id of the request answered first. */
  request_id: string | null;
  /** The answer's headers as the caller gave them (opaque here). */
  headers: string;
  /** What the first answer showed of the fields that may change after it (a create's name, status, metadata). */
  shown?: Record<string, unknown>;
  /** A refusal: the error the first request was answered with (the slot then holds no object, see `recordRefusal`). */
  refused?: { type: string; code: string; message: string; param: string };
}

/**
 * The fields an idempotently created document carries (ARCHITECTURE data rule 3, in ../shared/docs/).
 * `idempotency`: `<account>/<mode>/<key>` of the creating request, or the document's own id when the
 * request had no key, so the unique index never sees two equal values. `request_hash`: the
 * creating request's fingerprint, so a different request under the same key is refused. `answer`: the
 * first answer, when the caller asked for it to be recorded.
 */
export interface IdempotentDocument {
  _id: string;
  /** Unix seconds: the key's 24 hours count from here. */
  created: number;
  idempotency: string;
  request_hash: string | null;
  answer?: RecordedAnswer;
}

/** The document as reads load it (without its outbox), whether just made or found. */
export type InsertOnceResult<D> = { doc: Loaded<D>; replayed: boolean } | { conflict: true };

/**
 * What an insert that records its answer can also meet: the key's first document is written but not yet
 * majority-committed, so its request is still executing (`idempotency_key_in_use`).
 */
export type AnsweredInsertResult<D> = InsertOnceResult<D> | { inFlight: true };

/** A create request under its key, as insertOnce and recordRefusal compare it with the key's first one. */
export interface KeyedRequest {
  tenant: Tenant;
  key: string | null;
  /** The store's own fingerprint of the fields (`fingerprint`). */
  fingerprint: string;
  /** The answer to record with the document (only under a key). */
  answer?: RecordedAnswer;
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

/**
 * Whether a request is the key's first one again: by the caller's fingerprints when both recorded one (the
 * gateway's covers method and path, so the key used on another operation is another request), else by the
 * store's fingerprints of the fields.
 */
export function sameRequest(first: Pick<IdempotentDocument, "request_hash" | "answer">, callerFingerprint: string | undefined, storeFingerprint: string | null): boolean {
  if (first.answer && callerFingerprint !== undefined) return first.answer.fingerprint === callerFingerprint;
  return first.request_hash === storeFingerprint;
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
 *
 * With `request.answer` the answer is recorded with the document, and a repeat is answered from a read of the
 * first document at majority read concern: only an answer that can no longer be rolled back is replayed, and a
 * first document written but not yet majority-committed means its request is still executing (`inFlight`).
 */
export async function insertOnce<D extends IdempotentDocument>(
  collection: Collection<D>,
  doc: Omit<D, "idempotency" | "request_hash">,
  request: KeyedRequest & { answer: RecordedAnswer },
  budget?: Budget,
  now?: () => number,
): Promise<AnsweredInsertResult<D>>;
export async function insertOnce<D extends IdempotentDocument>(
  collection: Collection<D>,
  doc: Omit<D, "idempotency" | "request_hash">,
  request: KeyedRequest,
  budget?: Budget,
  now?: () => number,
): Promise<InsertOnceResult<D>>;
export async function insertOnce<D extends IdempotentDocument>(
  collection: Collection<D>,
  doc: Omit<D, "idempotency" | "request_hash">,
  request: KeyedRequest,
  budget: Budget = UNBOUNDED,
  now: () => number = Date.now,
): Promise<AnsweredInsertResult<D>> {
  const key = request.key;
  const full = {
    ...doc,
    idempotency: key ? idempotencyScope(request.tenant, key) : doc._id,
    request_hash: key ? request.fingerprint : null,
    ...(key && request.answer ? { answer: request.answer } : {}),
  } as D;
  return claimSlot(collection, full, request, budget, now, () => {
    const { pending_events: _outbox, ...loaded } = full as D & { pending_events?: unknown };
    return { doc: loaded as Loaded<D>, replayed: false };
  });
}

/**
 * Records a refusal under the key (a create whose parameters were refused, with the caller's answer to
 * record): a document that holds the key's slot and no object (no tenant fields, so no tenant's query ever
 * reads it; `deleted`, so no read by id does either), gone by the TTL index when the key's 24 hours end. A repeat
 * of the request then gets the same refusal from `insertOnce` (`replayed`, `answer.refused`), another request
 * under the key `conflict`, as for a created object. Returns `recorded`, or what the key already held.
 */
export async function recordRefusal<D extends IdempotentDocument>(
  collection: Collection<D>,
  id: string,
  request: KeyedRequest & { key: string; answer: RecordedAnswer & { refused: NonNullable<RecordedAnswer["refused"]> } },
  budget: Budget = UNBOUNDED,
  now: () => number = Date.now,
): Promise<AnsweredInsertResult<D> | { recorded: true }> {
  const nowMs = now();
  const slot = {
    _id: id,
    created: Math.floor(nowMs / 1000),
    idempotency: idempotencyScope(request.tenant, request.key),
    request_hash: null,
    answer: request.answer,
    deleted: true,
    [EXPIRES_AT]: expiryAt(nowMs, IDEMPOTENCY_RETENTION_MS),
  } as unknown as D;
  return claimSlot(collection, slot, { ...request, fingerprint: null }, budget, now, () => ({ recorded: true }) as const);
}

async function claimSlot<D extends IdempotentDocument, R>(
  collection: Collection<D>,
  full: D,
  request: Omit<KeyedRequest, "fingerprint"> & { fingerprint: string | null },
  budget: Budget,
  now: () => number,
  inserted: () => R,
): Promise<R | AnsweredInsertResult<D>> {
  const answered = request.answer !== undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      await writeWithin(budget, (options) => collection.insertOne(full as OptionalUnlessRequiredId<D>, options));
      return inserted();
    } catch (error) {
      if (!request.key || !isDuplicateKeyError(error) || attempt > 2) throw error;
      const bySlot = { idempotency: full.idempotency } as Filter<D>;
      const first = (await collection.findOne(bySlot, { ...WITHOUT_OUTBOX, ...budget.db(), ...(answered ? MAJORITY : {}) })) as Loaded<D> | null;
      if (!first) {
        // Not committed yet (its request is still executing), or removed since (released, expired): only a
        // local read tells which.
        if (answered && (await collection.findOne(bySlot, { projection: { _id: 1 }, ...budget.db() }))) return { inFlight: true };
        continue;
      }
      if (keyStillBound(first, now())) {
        return sameRequest(first, request.answer?.fingerprint, request.fingerprint) ? { doc: first, replayed: true } : { conflict: true };
      }
      // The key's window is over: release it from the old document (its own id takes the slot), then insert anew.
      await writeWithin(budget, (options) =>
        collection.updateOne({ _id: first._id, idempotency: full.idempotency } as Filter<D>, { $set: { idempotency: first._id } } as never, options),
      );
    }
  }
}

/** A read of what a majority of the replica set has: an answer that a failover can no longer roll back. */
const MAJORITY = { readConcern: { level: "majority" } } as const;
