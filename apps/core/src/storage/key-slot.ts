import { createHash } from "node:crypto";
import { IDEMPOTENCY_RETENTION_MS, idempotencyScopeId } from "@rms/proto";
import type { Collection, Filter } from "mongodb";
import type { Budget } from "../budget.js";
import type { Tenant } from "../caller.js";
import { WITHOUT_OUTBOX, type Loaded } from "./documents.js";

/**
 * The key slot of release 1.4.0, kept for the rolling upgrade from it (docs/migrations.md, "Planned: 1.4.2").
 *
 * A 1.4.0 core makes a keyed create of a job, a webhook endpoint or an upload exactly once by a unique slot on the
 * document (`idempotency` = the key's scope, under the unique index `idempotency_unique`): when its answer was never
 * recorded (it crashed, or its write's outcome was unknown), its retry finds the document by the slot. This release
 * decides exactly once by the key's record alone (the create and the record commit together: grpc/idempotent.ts), so:
 *
 * - it writes the document's own id in the slot (`ownSlot`): a unique value the index, still declared for 1.4.0 and
 *   a rollback to it, needs; nothing of this release reads it;
 * - beside a 1.4.0 core, a retry of a request that core made without recording its answer may come here: a keyed
 *   create first looks for a document 1.4.0 made under the key within its 24 hours (`madeBy140`, one read by the
 *   unique index) and answers it (or `idempotency_key_reused` for another request, as 1.4.0 would).
 *
 * Both go with the contract step of 1.4.2, which drops the index and the fields once no 1.4.0 process runs.
 */
export interface KeySlot {
  /** 1.4.0: the key's scope, or the document's own id without a key; from 1.4.1 on always its own id. */
  idempotency: string;
  /** 1.4.0: its own fingerprint of the create's fields (`fieldsFingerprint`); from 1.4.1 on null. */
  request_hash: string | null;
}

/** The slot a document of this release carries: its own id, no fingerprint. */
export function ownSlot(id: string): KeySlot {
  return { idempotency: id, request_hash: null };
}

/** The fingerprint 1.4.0 stored as `request_hash`: SHA-256 of the fields' JSON text. */
export function fieldsFingerprint(fields: unknown): string {
  return createHash("sha256").update(JSON.stringify(fields)).digest("base64url");
}

/** What a 1.4.0 core made under the key: its document (and whether the same request made it), or nothing. */
export type MadeBy140<D> = { readonly doc: Loaded<D>; readonly sameRequest: boolean } | null;

/**
 * The document a 1.4.0 core created under the tenant's `key` less than 24 hours ago, if any (see above); `sameRequest`
 * compares it with the create at hand as 1.4.0 did (its `request_hash`, or for uploads their fields).
 */
export async function madeBy140<D extends Pick<KeySlot, "idempotency"> & { created: number }>(
  collection: Collection<D>,
  tenant: Tenant,
  key: string | null,
  sameRequest: (first: Loaded<D>) => boolean,
  budget: Budget,
  nowMs = Date.now(),
): Promise<MadeBy140<D>> {
  if (key === null) return null;
  const bySlot = { idempotency: idempotencyScopeId(tenant.account, tenant.livemode, key) } as Filter<D>;
  const first = (await collection.findOne(bySlot, { ...WITHOUT_OUTBOX, ...budget.db() })) as Loaded<D> | null;
  if (first === null || first.created * 1000 + IDEMPOTENCY_RETENTION_MS <= nowMs) return null;
  return { doc: first, sameRequest: sameRequest(first) };
}
