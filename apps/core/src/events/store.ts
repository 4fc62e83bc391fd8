import type { Collection, Db, Filter, FindCursor } from "mongodb";
import type { Tenant } from "../caller.js";
import { boundedPage } from "../storage/bounded-page.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import type { Page } from "../grpc/list-request.js";
import { ensureEventExpiryIndex, ensureEventPositionIndex, EVENTS_COLLECTION } from "../storage/relay.js";
import { keysetIdRange } from "../storage/keyset-list.js";
import { errors } from "../errors.js";
import { EVENT_TYPES, eventBytes, type CreatedBounds, type ObjectFilter, type StoredEvent, type TypeFilter } from "./model.js";

export interface EventListQuery extends Page {
  type?: TypeFilter;
  created: CreatedBounds;
  /** true: every endpoint answered 2xx (`pending_endpoints` empty or absent, so no `undelivered`); false: at least one has not. */
  deliverySuccess?: boolean;
  /** One object's events by `sequence` (validation.ts allows it with the cursors only). */
  object?: ObjectFilter;
}

/** The path of the object id in a stored event: every snapshot records its object's `id`. */
export const OBJECT_ID_FIELD = "object.id";

/**
 * Reads of the events the relay copied (storage/relay.ts writes them; nothing here writes). Lists
 * are keyset pages by `_id`, newest first, like every list (data rule 5).
 */
export class EventStore {
  readonly collection: Collection<StoredEvent>;

  constructor(private readonly db: Db) {
    this.collection = db.collection<StoredEvent>(EVENTS_COLLECTION);
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
    await this.collection.createIndex({ account: 1, livemode: 1, type: 1, _id: -1 }, { name: "tenant_type_order" });
    // Retention: each event expires 30 days after its creation (storage/relay.ts copies it with `expires_at`).
    await ensureEventExpiryIndex(this.db);
    // delivery_success, alone or with a type (list); an endpoint's waiting events (recover): docs/database.md.
    await this.collection.createIndex({ account: 1, livemode: 1, undelivered: 1, type: 1, _id: -1 }, { name: "tenant_undelivered_type_order" });
    await this.collection.createIndex({ pending_endpoints: 1, _id: 1 }, { name: "pending_endpoint_order", partialFilterExpression: { undelivered: true } });
    // One object's events by sequence (`object=`, `sequence[...]`: gap repair): docs/events.md.
    await this.collection.createIndex({ account: 1, livemode: 1, [OBJECT_ID_FIELD]: 1, sequence: -1 }, { name: "tenant_object_sequence" });
    // A tenant's events in stream order (`pos`, given by the relay's copy): a stream's catch-up, docs/streams.md.
    await ensureEventPositionIndex(this.db);
  }

  async get(tenant: Tenant, id: string, budget: Budget = UNBOUNDED): Promise<StoredEvent | null> {
    const event = await this.collection.findOne({ _id: id }, budget.db());
    return event && event.account === tenant.account && event.livemode === tenant.livemode ? event : null;
  }

  async list(tenant: Tenant, query: EventListQuery, budget: Budget = UNBOUNDED): Promise<{ items: StoredEvent[]; hasMore: boolean }> {
    if (query.object) return this.listOfObject(tenant, { ...query, object: query.object }, budget);
    const filter: Record<string, unknown> = { account: tenant.account, livemode: tenant.livemode };
    // Every type condition is one type or a set of them, so an index on (..., type, _id) yields each in id
    // order and the sets are merged in order: a prefix is the known types it covers (CONTRACT.md section 7),
    // never a range of strings (a range needs an in-memory sort of everything in it) nor a pattern built
    // from the caller's text (data rule 6).
    const type = query.type;
    if (type && "exact" in type) filter["type"] = type.exact;
    if (type && "prefix" in type && type.prefix !== "") filter["type"] = { $in: EVENT_TYPES.filter((known) => known.startsWith(type.prefix)) };
    if (type && "anyOf" in type) filter["type"] = { $in: type.anyOf };
    const created: Record<string, number> = {};
    for (const [bound, value] of Object.entries(query.created)) created[`$${bound}`] = value;
    if (Object.keys(created).length > 0) filter["created"] = created;
    if (query.deliverySuccess !== undefined) {
      // The tenant_undelivered_type_order index: `undelivered` exists while an endpoint waits, then the
      // type, so without a type condition the set of every known type stands for "any type".
      filter["undelivered"] = query.deliverySuccess ? { $exists: false } : true;
      filter["type"] ??= { $in: [...EVENT_TYPES] };
    }
    const backwards = query.endingBefore !== undefined;
    const ids = keysetIdRange("evt", query, query.created);
    if (ids) filter["_id"] = ids;
    const cursor = this.collection.find(filter as Filter<StoredEvent>, {
      sort: { _id: backwards ? 1 : -1 },
      limit: query.limit + 1,
      batchSize: Math.min(query.limit + 1, 25),
      ...budget.db(),
    });
    return this.page(cursor, query.limit, backwards);
  }

  /**
   * One object's events, newest change first: by `sequence`, which orders an object's changes exactly (ids
   * order them only as far as the clocks of the processes that made them agree). A cursor is an event of
   * that object, read once for its sequence; the page is then a range of the `tenant_object_sequence` index.
   */
  private async listOfObject(
    tenant: Tenant,
    query: EventListQuery & { object: ObjectFilter },
    budget: Budget,
  ): Promise<{ items: StoredEvent[]; hasMore: boolean }> {
    const sequence: Record<string, number> = {};
    for (const [bound, value] of Object.entries(query.object.sequence)) sequence[`$${bound}`] = value;
    const backwards = query.endingBefore !== undefined;
    const [param, cursorId] = backwards ? ["ending_before", query.endingBefore!] : ["starting_after", query.startingAfter];
    if (cursorId !== undefined) {
      const at = await this.collection.findOne(
        { _id: cursorId },
        { projection: { account: 1, livemode: 1, [OBJECT_ID_FIELD]: 1, sequence: 1 }, ...budget.db() },
      );
      const of = at?.object as { id?: unknown } | undefined;
      if (!at || at.account !== tenant.account || at.livemode !== tenant.livemode || of?.id !== query.object.id) {
        throw errors.invalid("parameter_invalid", `Invalid ${param}: ${cursorId} is not an event of ${query.object.id}.`, param);
      }
      // A second bound of the same side narrows the first: both conditions hold.
      const key = backwards ? "$gt" : "$lt";
      const seq = at.sequence ?? 0;
      sequence[key] = key in sequence ? (backwards ? Math.max(sequence[key]!, seq) : Math.min(sequence[key]!, seq)) : seq;
    }
    const filter = {
      account: tenant.account,
      livemode: tenant.livemode,
      [OBJECT_ID_FIELD]: query.object.id,
      ...(Object.keys(sequence).length > 0 ? { sequence } : {}),
    };
    const cursor = this.collection.find(filter as Filter<StoredEvent>, {
      sort: { sequence: backwards ? 1 : -1 },
      limit: query.limit + 1,
      batchSize: Math.min(query.limit + 1, 25),
      ...budget.db(),
    });
    return this.page(cursor, query.limit, backwards);
  }

  /** A page of at most `limit` events (fewer once their objects pass the byte bound), newest first. */
  private async page(cursor: FindCursor<StoredEvent>, limit: number, backwards: boolean): Promise<{ items: StoredEvent[]; hasMore: boolean }> {
    // A `job.*` event snapshots the job's params (up to about 1 MiB): such a page holds fewer events.
    const { items: page, hasMore } = await boundedPage(cursor, limit, eventBytes);
    return { items: backwards ? page.reverse() : page, hasMore };
  }
}
