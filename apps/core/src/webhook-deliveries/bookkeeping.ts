import { isDuplicateKeyError } from "@rms/proto";
import type { AnyBulkWriteOperation, Collection, Db, Filter, MongoBulkWriteError } from "mongodb";
import { GroupCommit } from "../storage/group-commit.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import type { FlightEnd, Lanes } from "./lanes.js";
import {
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  webhookExpiresAt,
  type AttemptDocument,
  type DeliveryDocument,
  type FannedOutEvent,
} from "./model.js";

/**
 * The writes one worker's deliveries make, each grouped across every delivery of the process (group commit,
 * storage/group-commit.ts): attempts in one insertMany, the events' `pending_endpoints` pulls in one bulk
 * write, the deliveries' releases and deletes in one bulk write, the lanes' flight ends in one bulk write.
 * A delivery waits for each of its own writes in the order it made them one at a time (attempt, pull,
 * release, flight), so what a crash can cut off is what it could before: the writes not yet flushed.
 */

/**
 * How long the first write of a group waits for others when none is being flushed: none beyond the current
 * turn of the event loop ("what is in hand"). Under load a flush under way gathers the next group meanwhile;
 * a wait here would only add to every delivery's latency when the worker is quiet (and to a failing
 * endpoint's one-at-a-time pace).
 */
export const BOOKKEEPING_WINDOW_MS = 0;

/** A delivery's release (its lease freed, `set` applied) or, for a scheduled delivery that succeeded, its delete; both guarded by the epoch held. */
export type DeliveryWrite =
  | { readonly kind: "release"; readonly id: string; readonly epoch: number; readonly set: Partial<DeliveryDocument> }
  | { readonly kind: "delete"; readonly id: string; readonly epoch: number };

export class DeliveryBookkeeping {
  readonly attempts: GroupCommit<AttemptDocument, AttemptDocument>;
  readonly pulls: GroupCommit<{ event: string; endpoint: string }, null>;
  readonly deliveries: GroupCommit<DeliveryWrite, boolean>;
  readonly flights: GroupCommit<FlightEnd, null>;

  constructor(db: Db, owner: string, lanes: Lanes, now: () => number, windowMs: number = BOOKKEEPING_WINDOW_MS) {
    const attempts = db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
    const events = db.collection<FannedOutEvent>(EVENTS_COLLECTION);
    const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    this.attempts = new GroupCommit({ windowMs, flush: (items) => recordAttempts(attempts, items) });
    this.pulls = new GroupCommit({ windowMs, flush: (items) => pullPendingEndpoints(events, items) });
    this.deliveries = new GroupCommit({ windowMs, flush: (items) => writeDeliveries(deliveries, owner, items) });
    this.flights = new GroupCommit({ windowMs, flush: (items) => lanes.releaseFlights(items, now()).then(() => items.map(() => null)) });
  }

  /** Every write added so far flushed (an orderly stop). */
  async idle(): Promise<void> {
    await Promise.all([this.attempts.idle(), this.pulls.idle(), this.deliveries.idle(), this.flights.idle()]);
  }
}

function writeErrorsOf(error: unknown): { index: number; code?: number }[] {
  const failed = (error as Partial<MongoBulkWriteError>).writeErrors as unknown;
  return (Array.isArray(failed) ? failed : failed ? [failed] : []) as { index: number; code?: number }[];
}

/**
 * Inserts attempts by their ids in one unordered insert, each with its `expires_at`; an id stored already (a
 * repeat after a crash) keeps its first record, which is what that item answers.
 */
export async function recordAttempts(attempts: Collection<AttemptDocument>, items: readonly AttemptDocument[]): Promise<AttemptDocument[]> {
  const recorded = items.map((a) => ({ ...a, expires_at: webhookExpiresAt(a.created) }));
  try {
    await attempts.insertMany(recorded, { ordered: false });
    return recorded;
  } catch (error) {
    const failed = writeErrorsOf(error);
    if (failed.length === 0 ? !isDuplicateKeyError(error) : !failed.every((e) => e.code === 11000)) throw error;
    const duplicates = failed.length === 0 ? recorded.map((_, i) => i) : failed.map((e) => e.index);
    const stored = new Map((await attempts.find({ _id: { $in: duplicates.map((i) => recorded[i]!._id) } }).toArray()).map((a) => [a._id, a]));
    return recorded.map((a) => stored.get(a._id) ?? a);
  }
}

/** pending.ts's pull for many (event, endpoint) pairs in one unordered bulk write. */
async function pullPendingEndpoints(events: Collection<FannedOutEvent>, items: readonly { event: string; endpoint: string }[]): Promise<null[]> {
  await events.bulkWrite(
    items.map(({ event, endpoint }) => ({
      updateOne: {
        filter: { _id: event, pending_endpoints: endpoint } as Filter<FannedOutEvent>,
        update: [
          { $set: { pending_endpoints: { $filter: { input: "$pending_endpoints", cond: { $ne: ["$$this", { $literal: endpoint }] } } } } },
          { $set: { undelivered: { $cond: [{ $gt: [{ $size: "$pending_endpoints" }, 0] }, true, "$$REMOVE"] } } },
        ],
      },
    })),
    { ordered: false },
  );
  return items.map(() => null);
}

/**
 * Releases and deletes in one unordered bulk write, each only while `owner` holds the lease of its epoch.
 * Answers, per item, whether it applied: all of them when the counts say so (the usual case), else read
 * back (a release applied has left its epoch as `released_epoch`; a delete applied has left nothing).
 */
export async function writeDeliveries(deliveries: Collection<DeliveryDocument>, owner: string, items: readonly DeliveryWrite[]): Promise<boolean[]> {
  const held = (w: DeliveryWrite) => ({ _id: w.id, epoch: w.epoch, lease_owner: owner }) as Filter<DeliveryDocument>;
  const ops: AnyBulkWriteOperation<DeliveryDocument>[] = items.map((w) =>
    w.kind === "delete"
      ? { deleteOne: { filter: held(w) } }
      : {
          updateOne: {
            filter: held(w),
            update: { $set: { ...w.set, released_epoch: w.epoch, lease_owner: null, lease_until: null }, $unset: { lease_token: "" } },
          },
        },
  );
  const result = await deliveries.bulkWrite(ops, { ordered: false });
  if (result.matchedCount + result.deletedCount === items.length) return items.map(() => true);
  const after = new Map(
    (await deliveries.find({ _id: { $in: items.map((w) => w.id) } }, { projection: { released_epoch: 1 } }).toArray()).map((d) => [d._id, d]),
  );
  return items.map((w) => (w.kind === "delete" ? !after.has(w.id) : after.get(w.id)?.released_epoch === w.epoch));
}
