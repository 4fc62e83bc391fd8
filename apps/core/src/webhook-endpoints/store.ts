import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Db, Filter } from "mongodb";
import type { RequestInfo, Tenant } from "../caller.js";
import { inATransaction, UNBOUNDED, type Budget } from "../budget.js";
import { newId } from "../ids.js";
import type { MetadataPair } from "../metadata.js";
import { findLive, WITHOUT_OUTBOX, type Loaded } from "../storage/documents.js";
import { fieldsFingerprint, madeBy140, ownSlot } from "../storage/key-slot.js";
import { ensureKeysetIndexes, listPage } from "../storage/keyset-list.js";
import { updateVersioned } from "../storage/versioned-update.js";
import { writeWithin } from "../storage/write.js";
import { errors } from "../errors.js";
import { ENDPOINTS_PER_TENANT, type StoredSecret, type WebhookEndpointDocument, type WebhookEndpointStatusName } from "./model.js";
import { rotatedSecrets } from "./secrets.js";
import { WEBHOOK_ENDPOINTS_COLLECTION } from "../webhook-deliveries/model.js";

/** The collection is named once, beside the stored shapes delivery reads of it (webhook-deliveries/model.ts). */
export { WEBHOOK_ENDPOINTS_COLLECTION };

/** An endpoint whose outbox holds nothing (the negation of the relay's HAS_PENDING_EVENTS). */
const OUTBOX_EMPTY = { "pending_events._id": { $exists: false } } as const;
/** Relays and deletes tried before a delete gives up (each relay empties the outbox unless the database fails). */
const DELETE_ATTEMPTS = 3;

/** An endpoint as reads load it. */
export type LoadedEndpoint = Loaded<WebhookEndpointDocument>;

export interface EndpointFields {
  url: string;
  enabled_events: string[];
  status: WebhookEndpointStatusName;
  description: string | null;
  metadata: MetadataPair[];
}

export interface EndpointChanges {
  url?: string;
  enabled_events?: string[];
  status?: WebhookEndpointStatusName;
  description?: string | null;
  /** Computes the new metadata from the current one (the shared merge rules, metadata.ts). */
  metadata?: (current: MetadataPair[]) => MetadataPair[];
}

/** Seals a new signing key for the endpoint id it is bound to (the id is the sealing context), with its scheme. */
export type SealFor = (endpointId: string) => StoredSecret;

/**
 * A create's outcome: the endpoint (`replayed`: one a 1.4.0 core made under the same key, storage/key-slot.ts),
 * another request under a key 1.4.0 used (`conflict`), or refused at the tenant's ENDPOINTS_PER_TENANT.
 */
export type CreateResult = { doc: LoadedEndpoint; replayed: boolean } | { conflict: true } | { limitReached: true };

/**
 * Storage of webhook endpoints on the shared mechanisms of storage/: one insert per create, versioned
 * update, keyset list. The 16-per-tenant limit is a unique index on (account, livemode, slot): a
 * create takes the first free slot, so no count can drift when a process dies between two writes.
 */
export class WebhookEndpointStore {
  readonly collection: Collection<WebhookEndpointDocument>;

  constructor(db: Db) {
    this.collection = db.collection<WebhookEndpointDocument>(WEBHOOK_ENDPOINTS_COLLECTION);
  }

  async ensureIndexes(): Promise<void> {
    // 1.4.0's key slot, which its cores need beside this release's (storage/key-slot.ts).
    await this.collection.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
    await this.collection.createIndex({ account: 1, livemode: 1, slot: 1 }, { unique: true, name: "tenant_slot_unique" });
    await ensureKeysetIndexes(this.collection);
  }

  /**
   * Creates an endpoint in a free slot; with none left the answer is `limitReached`. Exactly once under an
   * Idempotency-Key is the key's record's (grpc/idempotent.ts): the insert commits with the record of its answer in
   * the call's transaction (`budget`), where two creates taking one slot conflict and the call runs again; without
   * one, a slot taken by a concurrent create (duplicate key) moves on to the next.
   */
  async create(tenant: Tenant, fields: EndpointFields, seal: SealFor, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<CreateResult> {
    // The scheme counts only when not the default, as 1.4.0 fingerprinted a `v1` create.
    const fingerprint = (scheme: string | undefined) =>
      fieldsFingerprint([
        fields.url,
        fields.enabled_events,
        fields.status,
        fields.description,
        fields.metadata.map((p) => [p.k, p.v]),
        ...(scheme ? [scheme] : []),
      ]);
    const earlier = await madeBy140(
      this.collection,
      tenant,
      request.idempotencyKey,
      (first) => first.request_hash === fingerprint(first.secrets[0]?.scheme),
      budget,
    );
    if (earlier) return earlier.sameRequest ? { doc: earlier.doc, replayed: true } : { conflict: true };
    const nowMs = Date.now();
    const id = newId("we", nowMs);
    const used = new Set(
      (await this.collection.find({ account: tenant.account, livemode: tenant.livemode }, { projection: { slot: 1 }, ...budget.db() }).toArray()).map(
        (d) => d.slot,
      ),
    );
    const free = [...Array(ENDPOINTS_PER_TENANT).keys()].filter((slot) => !used.has(slot));
    if (free.length === 0) return { limitReached: true };
    const doc: WebhookEndpointDocument = {
      _id: id,
      account: tenant.account,
      livemode: tenant.livemode,
      ...fields,
      created: Math.floor(nowMs / 1000),
      secrets: [seal(id)],
      version: 0,
      pending_events: [],
      slot: 0,
      ...ownSlot(id),
    };
    // One free slot, chosen at random so that concurrent creates rarely meet, in a transaction (a conflict aborts it);
    // every free slot in turn outside one.
    const slots = inATransaction(budget) ? [free[Math.floor(Math.random() * free.length)]!] : free;
    for (const slot of slots) {
      try {
        await writeWithin(budget, (options) => this.collection.insertOne({ ...doc, slot }, options));
      } catch (error) {
        if (!isDuplicateKeyError(error) || inATransaction(budget)) throw error;
        continue;
      }
      const { pending_events: _outbox, ...loaded } = { ...doc, slot };
      return { doc: loaded, replayed: false };
    }
    return { limitReached: true };
  }

  get(tenant: Tenant, id: string, budget: Budget = UNBOUNDED): Promise<LoadedEndpoint | null> {
    return findLive(this.collection, tenant, id, budget);
  }

  /** Applies changes under the version check; null when the endpoint is gone. A change that alters nothing writes nothing. */
  async update(tenant: Tenant, id: string, changes: EndpointChanges, budget: Budget = UNBOUNDED): Promise<LoadedEndpoint | null> {
    const result = await updateVersioned(
      this.collection,
      tenant,
      id,
      (current) => {
        const set: Partial<WebhookEndpointDocument> = {};
        if (changes.url !== undefined && changes.url !== current.url) set.url = changes.url;
        if (changes.enabled_events && !sameList(changes.enabled_events, current.enabled_events)) set.enabled_events = changes.enabled_events;
        if (changes.status !== undefined && changes.status !== current.status) {
          set.status = changes.status;
          // An operator's re-enable clears why delivery disabled it.
          if (changes.status === "enabled") set.disabled_reason = null;
        }
        if (changes.description !== undefined && changes.description !== current.description) set.description = changes.description;
        if (changes.metadata) {
          const metadata = changes.metadata(current.metadata);
          if (
            !sameList(
              metadata.map((p) => `${p.k}\u0000${p.v}`),
              current.metadata.map((p) => `${p.k}\u0000${p.v}`),
            )
          )
            set.metadata = metadata;
        }
        return Object.keys(set).length > 0 ? { set, events: [] } : null;
      },
      budget,
    );
    return result?.after ?? null;
  }

  /**
   * A new current key (`next` makes it, sealed, given the endpoint's newest key: the scheme to keep when none
   * is asked); the previous ones keep signing for `graceS` seconds. Null when the endpoint is gone.
   */
  async rotate(
    tenant: Tenant,
    id: string,
    next: (newest: StoredSecret | undefined) => StoredSecret,
    graceS: number,
    budget: Budget = UNBOUNDED,
    nowMs = Date.now(),
  ): Promise<LoadedEndpoint | null> {
    let made: StoredSecret | undefined;
    const result = await updateVersioned(
      this.collection,
      tenant,
      id,
      // One new key, whatever races the write loses: a retry reads the endpoint again, not the key.
      (current) => {
        made ??= next(current.secrets[0]);
        return { set: { secrets: rotatedSecrets(current.secrets, made, nowMs, graceS) }, events: [] };
      },
      budget,
    );
    return result?.after ?? null;
  }

  /**
   * Removes the endpoint for good (its slot is free at once); null when it was already gone. Only an
   * endpoint with an empty outbox is deleted: a `webhook_endpoint.disabled` event still waiting in it is
   * relayed first (`relayNow`), so deleting the endpoint never loses the event of its disabling.
   */
  async delete(
    tenant: Tenant,
    id: string,
    budget: Budget = UNBOUNDED,
    relayNow?: (collection: string, id: string) => Promise<void>,
  ): Promise<LoadedEndpoint | null> {
    const filter = { _id: id, account: tenant.account, livemode: tenant.livemode } as Filter<WebhookEndpointDocument>;
    for (let attempt = 0; attempt < DELETE_ATTEMPTS; attempt++) {
      const deleted = await writeWithin(budget, (options) =>
        this.collection.findOneAndDelete({ ...filter, ...OUTBOX_EMPTY }, { ...WITHOUT_OUTBOX, ...options }),
      );
      if (deleted) return deleted as LoadedEndpoint;
      if (!(await this.collection.findOne(filter, { projection: { _id: 1 }, ...budget.db() }))) return null;
      if (!relayNow) break;
      await relayNow(WEBHOOK_ENDPOINTS_COLLECTION, id);
    }
    throw errors.of("service_unavailable");
  }

  /** One page, newest first (storage/keyset-list.ts). */
  list(
    tenant: Tenant,
    query: { limit: number; startingAfter?: string; endingBefore?: string },
    budget: Budget = UNBOUNDED,
  ): Promise<{ items: LoadedEndpoint[]; hasMore: boolean }> {
    return listPage(this.collection, tenant, query, budget);
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}
