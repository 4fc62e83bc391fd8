import type { Collection, Document, Filter, Sort, UpdateFilter, WithId } from "mongodb";

/**
 * The fields a leased document carries (ARCHITECTURE data rule 4, in ../shared/docs/). `epoch` grows with
 * every claim, so a worker whose lease was taken over holds a stale epoch and its guarded writes match nothing.
 */
export interface Leased {
  lease_owner?: string | null;
  /** Unix ms; the lease is free once this has passed. Null or absent: never leased, or released. */
  lease_until?: number | null;
  epoch?: number;
  /** The claim that took it, when several were taken in one write (claimMany); read back by it. */
  lease_token?: string;
}

export interface LeaseOptions {
  /** Who holds the lease: unique per worker process (logs, tests). */
  owner: string;
  /** How long a claim or renewal holds the document; a holder that dies frees it after this. */
  leaseMs: number;
  /** The clock leases are judged by (tests move it). */
  now?: () => number;
}

/**
 * A collection used as a queue of leased work: claim a due document (free or with an expired lease),
 * renew, write checkpoints guarded by the epoch, release. Every operation is one single-document write,
 * so any number of worker processes can share a queue with nothing but the database between them.
 */
export class LeaseQueue<T extends Document & Leased> {
  private readonly now: () => number;

  constructor(
    private readonly collection: Collection<T>,
    private readonly options: LeaseOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Takes the first document matching `filter` (in `sort` order) whose lease is free; null when none is. The answer carries the new epoch. */
  async claim(filter: Filter<T>, sort?: Sort): Promise<WithId<T> | null> {
    const now = this.now();
    return this.collection.findOneAndUpdate(
      claimable(filter, now),
      { $set: { lease_owner: this.options.owner, lease_until: now + this.options.leaseMs }, $inc: { epoch: 1 } } as unknown as UpdateFilter<T>,
      { returnDocument: "after", ...(sort ? { sort } : {}) },
    );
  }

  /**
   * Takes up to `limit` documents matching `filter` (first in `sort` order) whose lease is free, in one write:
   * their ids are read, then one `updateMany` leases those still free (each document's filter is checked
   * again as it is written, so of two racing claims each document goes to one) under `token`, and the ones
   * this claim won are read back with their new epochs, in `sort` order. When one id is found, one
   * `findAndModify` leases and returns it instead.
   */
  async claimMany(filter: Filter<T>, sort: Sort, limit: number, token: string): Promise<WithId<T>[]> {
    // One document: one findAndModify, a round trip instead of three.
    if (limit === 1) {
      const one = await this.claim(filter, sort);
      return one ? [one] : [];
    }
    const now = this.now();
    const free = claimable(filter, now);
    const ids = (await this.collection.find(free, { sort, limit, projection: { _id: 1 } }).toArray()).map((d) => d._id);
    if (ids.length === 0) return [];
    const mine = { $and: [{ _id: { $in: ids } }, free] } as Filter<T>;
    const lease = {
      $set: { lease_owner: this.options.owner, lease_until: now + this.options.leaseMs, lease_token: token },
      $inc: { epoch: 1 },
    } as unknown as UpdateFilter<T>;
    // One document found (a calm queue: one delivery due in its lane): one findAndModify leases and returns it,
    // a round trip instead of two on the way from a create to its webhook.
    if (ids.length === 1) {
      const one = await this.collection.findOneAndUpdate(mine, lease, { returnDocument: "after" });
      return one ? [one] : [];
    }
    const { modifiedCount } = await this.collection.updateMany(mine, lease);
    if (modifiedCount === 0) return [];
    return this.collection.find({ _id: { $in: ids }, lease_owner: this.options.owner, lease_token: token } as Filter<T>, { sort }).toArray();
  }

  /** Extends a held lease; false when it was lost (taken over at a later epoch, or the document is gone). */
  async renew(id: T["_id"], epoch: number): Promise<boolean> {
    return this.update(id, epoch, {});
  }

  /** Applies `update` only while the lease of `epoch` is held, and extends it; false when it was lost. */
  async update(id: T["_id"], epoch: number, update: UpdateFilter<T>): Promise<boolean> {
    const until = this.now() + this.options.leaseMs;
    const result = await this.collection.updateOne(this.held(id, epoch), mergeSet(update, { lease_until: until }));
    return result.matchedCount === 1;
  }

  /** Applies `update` and frees the lease in the same write, so the next claim may come at once; false when it was lost. */
  async release(id: T["_id"], epoch: number, update: UpdateFilter<T> = {}): Promise<boolean> {
    const result = await this.collection.updateOne(this.held(id, epoch), mergeSet(update, { lease_owner: null, lease_until: null }));
    return result.matchedCount === 1;
  }

  private held(id: T["_id"], epoch: number): Filter<T> {
    return { _id: id, epoch, lease_owner: this.options.owner } as Filter<T>;
  }
}

/** What a claim at `now` filters on: `filter`, and a free lease (never taken, released, or expired). */
export function claimable<T>(filter: Filter<T>, now: number): Filter<T> {
  return { $and: [filter, { $or: [{ lease_until: null }, { lease_until: { $lte: now } }] }] } as Filter<T>;
}

/** `update` with `fields` added to its `$set`. */
function mergeSet<T>(update: UpdateFilter<T>, fields: Record<string, unknown>): UpdateFilter<T> {
  const set = { ...((update as { $set?: Record<string, unknown> }).$set ?? {}), ...fields };
  return { ...update, $set: set } as UpdateFilter<T>;
}
