import { createHash } from "node:crypto";
import type { Collection, Db, Filter } from "mongodb";
import { errors, isUnansweredWrite } from "../errors.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
import { newId } from "../ids.js";
import { sameMetadata } from "./validation.js";
import type { PendingEvent, ResourceDocument, ResourceState, ResourceStatusName, MetadataPair } from "./model.js";

export interface Tenant {
  account: string;
  livemode: boolean;
}

/** Who asked, carried into the events a write records. */
export interface RequestInfo {
  requestId: string | null;
  idempotencyKey: string | null;
}

export interface ResourceChanges {
  name?: string;
  status?: ResourceStatusName;
  /** Computes the new metadata from the current one (merge rules live in validation.ts). */
  metadata?: (current: MetadataPair[]) => MetadataPair[];
}

export interface ListQuery {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
  status?: ResourceStatusName;
}

/** How long an Idempotency-Key stays bound to the resource it created (CONTRACT.md section 5, in ../shared/docs/). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Retries of an optimistic update that lost a race before giving up. The version check
 * is the only serialisation (a filtered update is atomic on one document, on MongoDB and
 * mongo-java-server alike), so racers on one resource from any number of processes each
 * lose at most once per winner.
 */
const MAX_UPDATE_ATTEMPTS = 64;

const live = { deleted: { $exists: false } } as const;

export function stateOf(doc: ResourceDocument): ResourceState {
  return { id: doc._id, name: doc.name, status: doc.status, metadata: doc.metadata, created: doc.created };
}

/**
 * Storage of resources. Every change is one single-document write that also
 * pushes its event into `pending_events` (the outbox), so a change and its event
 * commit together or not at all.
 */
export class ResourceStore {
  readonly collection: Collection<ResourceDocument>;

  constructor(db: Db) {
    this.collection = db.collection<ResourceDocument>("resources");
  }

  /** `secondary`: also the non-unique indexes, on engines that use them (db-engine.ts). */
  async ensureIndexes({ secondary }: { secondary: boolean }): Promise<void> {
    // One resource per idempotency key (docs/architecture.md, data rule 3), enforced by the database itself,
    // so a retry after any crash finds the first resource instead of making a second.
    await this.collection.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
    if (!secondary) return;
    // Keyset pagination: ids sort by creation time, so (tenant, _id desc) is the whole order.
    await this.collection.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
    await this.collection.createIndex({ account: 1, livemode: 1, status: 1, _id: -1 }, { name: "tenant_status_order" });
  }

  private event(
    type: PendingEvent["type"],
    tenant: Tenant,
    object: ResourceState,
    request: RequestInfo,
    previous: PendingEvent["previous_attributes"] = null,
  ): PendingEvent {
    return {
      _id: newId("evt"),
      type,
      created: Math.floor(Date.now() / 1000),
      account: tenant.account,
      livemode: tenant.livemode,
      object,
      previous_attributes: previous,
      request: { id: request.requestId, idempotency_key: request.idempotencyKey },
    };
  }

  /**
   * Creates a resource, at most once per idempotency key: when the key was used
   * before, the first resource is returned (`replayed`), or `conflict` when that
   * first request was a different one (its fingerprint differs).
   */
  async create(
    tenant: Tenant,
    fields: { name: string; status: ResourceStatusName; metadata: MetadataPair[] },
    request: RequestInfo,
    budget: Budget = UNBOUNDED,
  ): Promise<{ doc: ResourceDocument; replayed: boolean } | { conflict: true }> {
    const nowMs = Date.now();
    const id = newId("res", nowMs);
    const state: ResourceState = { id, ...fields, created: Math.floor(nowMs / 1000) };
    const key = request.idempotencyKey;
    const requestHash = key ? fingerprint(fields) : null;
    const doc: ResourceDocument = {
      _id: id,
      account: tenant.account,
      livemode: tenant.livemode,
      ...state,
      idempotency: key ? idempotencyScope(tenant, key) : id,
      request_hash: requestHash,
      version: 0,
      pending_events: [this.event("resource.created", tenant, state, request)],
    };
    for (let attempt = 0; ; attempt++) {
      try {
        await written(budget, (options) => this.collection.insertOne(doc, options));
        return { doc, replayed: false };
      } catch (error) {
        if (!key || (error as { code?: number }).code !== 11000 || attempt > 0) throw error;
        const first = await this.collection.findOne({ idempotency: doc.idempotency }, budget.db());
        if (!first) throw error;
        if (first.created * 1000 + IDEMPOTENCY_RETENTION_MS > nowMs) {
          return first.request_hash === requestHash ? { doc: first, replayed: true } : { conflict: true };
        }
        // The key's 24 hours are over: release it from the old resource, then create anew.
        await written(budget, (options) => this.collection.updateOne({ _id: first._id, idempotency: doc.idempotency }, { $set: { idempotency: first._id } }, options));
      }
    }
  }

  async get(tenant: Tenant, id: string, budget: Budget = UNBOUNDED): Promise<ResourceDocument | null> {
    // By _id alone, tenant and tombstone checked here: the same answer, and the one filter FerretDB
    // pushes down to its storage (with more fields it decodes every document of the collection).
    const doc = await this.collection.findOne({ _id: id }, budget.db());
    return doc && doc.account === tenant.account && doc.livemode === tenant.livemode && doc.deleted === undefined ? doc : null;
  }

  /**
   * Applies changes with optimistic concurrency: read, compute, then write only
   * if the version is still the one read. Returns null when the resource is gone.
   * A change that alters nothing writes nothing and records no event.
   */
  async update(tenant: Tenant, id: string, changes: ResourceChanges, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<ResourceDocument | null> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const current = await this.get(tenant, id, budget);
      if (!current) return null;
      const next: ResourceState = {
        ...stateOf(current),
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.status !== undefined ? { status: changes.status } : {}),
        ...(changes.metadata ? { metadata: changes.metadata(current.metadata) } : {}),
      };
      const previous = changedFields(stateOf(current), next);
      if (!previous) return current;
      const event = this.event("resource.updated", tenant, next, request, previous);
      const result = await written(budget, (options) =>
        this.collection.updateOne(
          { _id: id, account: tenant.account, livemode: tenant.livemode, version: current.version, ...live },
          { $set: { name: next.name, status: next.status, metadata: next.metadata }, $inc: { version: 1 }, $push: { pending_events: event } },
          options,
        ),
      );
      if (result.modifiedCount === 1) {
        return { ...current, ...next, version: current.version + 1, pending_events: [...current.pending_events, event] };
      }
    }
    throw new Error(`update of ${id} kept losing races`);
  }

  /** Tombstones the resource with its deletion event. Returns null when it was already gone. */
  async delete(tenant: Tenant, id: string, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<ResourceDocument | null> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const current = await this.get(tenant, id, budget);
      if (!current) return null;
      const event = this.event("resource.deleted", tenant, stateOf(current), request);
      const result = await written(budget, (options) =>
        this.collection.updateOne(
          { _id: id, account: tenant.account, livemode: tenant.livemode, version: current.version, ...live },
          { $set: { deleted: true }, $inc: { version: 1 }, $push: { pending_events: event } },
          options,
        ),
      );
      if (result.modifiedCount === 1) return current;
    }
    throw new Error(`delete of ${id} kept losing races`);
  }

  /**
   * One page, newest first. The cursor is an id, and ids encode their position,
   * so a cursor stays valid after its resource is deleted and a page costs the
   * same at any depth (an index range, never a skip).
   */
  async list(tenant: Tenant, query: ListQuery, budget: Budget = UNBOUNDED): Promise<{ items: ResourceDocument[]; hasMore: boolean }> {
    const filter: Filter<ResourceDocument> = { account: tenant.account, livemode: tenant.livemode, ...live };
    if (query.status) filter.status = query.status;
    const backwards = query.endingBefore !== undefined;
    if (query.startingAfter !== undefined) filter._id = { $lt: query.startingAfter };
    if (query.endingBefore !== undefined) filter._id = { $gt: query.endingBefore };
    const found = await this.collection
      .find(filter, { sort: { _id: backwards ? 1 : -1 }, limit: query.limit + 1, ...budget.db() })
      .toArray();
    const hasMore = found.length > query.limit;
    const page = found.slice(0, query.limit);
    return { items: backwards ? page.reverse() : page, hasMore };
  }
}

/**
 * Runs one write command within the call's budget: refused before sending when no time
 * is left (nothing done), and reported as outcome unknown when it was sent but its
 * answer never came (it may still commit).
 */
async function written<T>(budget: Budget, write: (options: { timeoutMS?: number }) => Promise<T>): Promise<T> {
  budget.beforeWrite();
  const options = budget.db();
  try {
    return await write(options);
  } catch (error) {
    if (isUnansweredWrite(error)) throw errors.outcomeUnknown();
    throw error;
  }
}

function idempotencyScope(tenant: Tenant, key: string): string {
  return `${tenant.account}/${tenant.livemode ? "live" : "test"}/${key}`;
}

/** A stable fingerprint of a create request's fields. */
function fingerprint(fields: { name: string; status: ResourceStatusName; metadata: MetadataPair[] }): string {
  return createHash("sha256").update(JSON.stringify([fields.name, fields.status, fields.metadata.map((p) => [p.k, p.v])])).digest("base64url");
}

/** Old values of the fields that differ, or null when nothing changed. */
function changedFields(before: ResourceState, after: ResourceState): PendingEvent["previous_attributes"] {
  const previous: NonNullable<PendingEvent["previous_attributes"]> = {};
  if (before.name !== after.name) previous.name = before.name;
  if (before.status !== after.status) previous.status = before.status;
  if (!sameMetadata(before.metadata, after.metadata)) previous.metadata = before.metadata;
  return Object.keys(previous).length ? previous : null;
}

