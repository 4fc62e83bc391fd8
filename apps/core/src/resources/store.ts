import { MongoBulkWriteError, type Collection, type Db } from "mongodb";
import type { RequestInfo, Tenant } from "../caller.js";
import { afterCommit, UNBOUNDED, type Budget } from "../budget.js";
import { newId } from "../ids.js";
import { findLive, type Loaded } from "../storage/documents.js";
import { ensureExpiryIndex } from "../storage/expiry.js";
import { ownSlot } from "../storage/key-slot.js";
import { writeWithin } from "../storage/write.js";
import { pageFrom, type KeysetQuery } from "../storage/keyset-list.js";
import { newEvent } from "../storage/outbox.js";
import { tombstone } from "../storage/tombstone.js";
import { updateVersioned } from "../storage/versioned-update.js";
import type { ResourceFilter } from "./filter.js";
import { ensureFilterIndexes, findFilter, nameFields, resourceQuery } from "./filter-query.js";
import { searchPage, type SearchPage } from "./search.js";
import { sameMetadata } from "./validation.js";
import {
  ANSWER_PROJECTION,
  type AnsweredResource,
  type MetadataPair,
  type PendingEvent,
  type ResourceDocument,
  type ResourceState,
  type ResourceStatusName,
} from "./model.js";

export interface ResourceChanges {
  name?: string;
  status?: ResourceStatusName;
  /** Computes the new metadata from the current one (merge rules live in validation.ts). */
  metadata?: (current: MetadataPair[]) => MetadataPair[];
}

/** The fields of a new resource, as validated. */
export interface ResourceFields {
  name: string;
  status: ResourceStatusName;
  metadata: MetadataPair[];
}

export interface ListQuery extends Omit<KeysetQuery<ResourceDocument>, "where"> {
  filter: ResourceFilter;
}

/** A resource as reads load it (without its outbox). */
export type LoadedResource = Loaded<ResourceDocument>;

export const RESOURCES_COLLECTION = "resources";

export function stateOf(doc: LoadedResource): ResourceState {
  return { id: doc._id, name: doc.name, status: doc.status, metadata: doc.metadata, created: doc.created };
}

/**
 * Storage of resources, made of the shared mechanisms of storage/: every change is one
 * single-document write that also records its event in the document's outbox.
 */
export class ResourceStore {
  readonly collection: Collection<ResourceDocument>;
  /**
   * The same collection for the reads whose result is the answer (retrieve, list, search): read concern
   * `majority`, so no answer shows a write that a primary cut off from the others took and then rolled back
   * (docs/database.md, "Read concern"). Writes, and the reads they decide from, stay on `collection` (`local`).
   */
  private readonly answers: Collection<ResourceDocument>;

  /** `written`: told of every document a write changed, so the relay moves its events at once. */
  constructor(
    db: Db,
    private readonly written: (collection: string, id: string) => void = () => {},
  ) {
    this.collection = db.collection<ResourceDocument>(RESOURCES_COLLECTION);
    this.answers = db.collection<ResourceDocument>(RESOURCES_COLLECTION, { readConcern: { level: "majority" } });
  }

  async ensureIndexes(): Promise<void> {
    // The list, search and bulk jobs' filter (filter-query.ts): docs/database.md, "Every query has an index".
    await ensureFilterIndexes(this.collection);
    // Tombstones expire once their event is out and their idempotency window has closed (storage/tombstone.ts).
    await ensureExpiryIndex(this.collection);
  }

  /**
   * Creates a resource: one insert, with its event in its outbox. Exactly once per Idempotency-Key is the key's
   * record's (grpc/idempotent.ts): under a key the insert commits in one transaction with the record of its answer
   * (the declaration's `atomic`), so a resource exists exactly when its key's answer does, and the document needs
   * no unique slot of its own (docs/idempotency-and-limits.md, "One commit").
   */
  async create(tenant: Tenant, fields: ResourceFields, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<{ doc: LoadedResource }> {
    const nowMs = Date.now();
    const state: ResourceState = { id: newId("res", nowMs), ...fields, created: Math.floor(nowMs / 1000) };
    const created: PendingEvent = newEvent("resource.created", tenant, state, request, null, nowMs);
    const doc: ResourceDocument = {
      _id: state.id,
      account: tenant.account,
      livemode: tenant.livemode,
      ...state,
      ...nameFields(state.name),
      version: 0,
      ...ownSlot(state.id),
      pending_events: [created],
    };
    await writeWithin(budget, (options) => this.collection.insertOne(doc, options));
    // Inside the call's transaction the relay is told once it commits: before, it would find nothing.
    afterCommit(budget, () => this.written(RESOURCES_COLLECTION, state.id));
    const { pending_events: _outbox, ...loaded } = doc;
    return { doc: loaded };
  }

  /**
   * Inserts resources another domain made whole (a job's import chunk, resources/batch.ts `importedResource`, each
   * with its event in its outbox) in one unordered `insertMany`. A duplicate key is a resource an earlier attempt
   * inserted (done); any other refusal of one document is returned by its position (a poison item). An error of the
   * whole command (network, timeout) is thrown. The caller tells the relay of what it inserted.
   */
  async insertMany(docs: ResourceDocument[]): Promise<Map<number, string>> {
    const refused = new Map<number, string>();
    if (docs.length === 0) return refused;
    try {
      await this.collection.insertMany(docs, { ordered: false });
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError) || error.writeConcernError) throw error;
      const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      if (writeErrors.length === 0) throw error;
      for (const w of writeErrors) if (w.code !== 11000) refused.set(w.index, "The database refused this item's resource.");
    }
    return refused;
  }

  get(tenant: Tenant, id: string, budget: Budget = UNBOUNDED): Promise<AnsweredResource | null> {
    return findLive(this.answers, tenant, id, budget, ANSWER_PROJECTION);
  }

  /**
   * Applies changes under the version check (storage/versioned-update.ts). Returns null when
   * the resource is gone. A change that alters nothing writes nothing and records no event.
   */
  async update(tenant: Tenant, id: string, changes: ResourceChanges, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<LoadedResource | null> {
    const result = await updateVersioned(
      this.collection,
      tenant,
      id,
      (current) => {
        const next: ResourceState = {
          ...stateOf(current),
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.status !== undefined ? { status: changes.status } : {}),
          ...(changes.metadata ? { metadata: changes.metadata(current.metadata) } : {}),
        };
        const previous = changedFields(stateOf(current), next);
        if (!previous) return null;
        const event: PendingEvent = newEvent("resource.updated", tenant, next, request, previous);
        return { set: { name: next.name, ...nameFields(next.name), status: next.status, metadata: next.metadata }, events: [event] };
      },
      budget,
    );
    if (result && result.after.version !== result.before.version) this.written(RESOURCES_COLLECTION, id);
    return result?.after ?? null;
  }

  /** Tombstones the resource with its deletion event. Returns null when it was already gone. */
  async delete(tenant: Tenant, id: string, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<LoadedResource | null> {
    const before = await tombstone(
      this.collection,
      tenant,
      id,
      (current): PendingEvent => newEvent("resource.deleted", tenant, stateOf(current), request),
      budget,
    );
    if (before) this.written(RESOURCES_COLLECTION, id);
    return before;
  }

  /** One page of the filter's matches, newest first, through the index its query names (filter-query.ts; storage/keyset-list.ts). */
  async list(tenant: Tenant, query: ListQuery, budget: Budget = UNBOUNDED): Promise<{ items: AnsweredResource[]; hasMore: boolean }> {
    const backwards = query.endingBefore !== undefined;
    const matching = resourceQuery(tenant, query.filter, { lt: query.startingAfter, gt: query.endingBefore });
    const found = (await this.answers
      .find(findFilter(matching), {
        sort: { _id: backwards ? 1 : -1 },
        limit: query.limit + 1,
        hint: matching.index,
        projection: ANSWER_PROJECTION,
        ...budget.db(),
      })
      .toArray()) as AnsweredResource[];
    return pageFrom(found, query.limit, backwards);
  }

  /** One search page of the filter's matches below `after`, at most 1,000 documents examined (search.ts). */
  search(tenant: Tenant, filter: ResourceFilter, page: { limit: number; after?: string | undefined }, budget: Budget = UNBOUNDED): Promise<SearchPage> {
    return searchPage(this.answers, tenant, filter, page, budget);
  }
}

/** Old values of the fields that differ, or null when nothing changed. */
export function changedFields(before: ResourceState, after: ResourceState): PendingEvent["previous_attributes"] {
  const previous: NonNullable<PendingEvent["previous_attributes"]> = {};
  if (before.name !== after.name) previous.name = before.name;
  if (before.status !== after.status) previous.status = before.status;
  if (!sameMetadata(before.metadata, after.metadata)) previous.metadata = before.metadata;
  return Object.keys(previous).length ? previous : null;
}
