import type { Db } from "mongodb";

/**
 * A queue's wake-up counter (docs/architecture.md, "Wake-up counters"): one document by `_id` that a
 * producer `$inc`s after queuing work and idle workers read every few ms, claiming at once when it moved
 * instead of at their next full look. Losing a signal (a slow database, two first upserts racing on the
 * duplicate key) costs one full look of latency: the work is queued all the same.
 */
export class QueueSignal {
  constructor(
    private readonly collection: string,
    private readonly id: string,
  ) {}

  /** Tells idle workers that `count` items were queued; never fails. */
  async signal(db: Db, count = 1): Promise<void> {
    try {
      await db.collection<{ _id: string; queued: number }>(this.collection).updateOne({ _id: this.id }, { $inc: { queued: count } }, { upsert: true, timeoutMS: 5_000 });
    } catch {
      // Workers find the work by their periodic look.
    }
  }

  /** The counter now (0 before the first signal). */
  async read(db: Db): Promise<number> {
    return (await db.collection<{ _id: string; queued: number }>(this.collection).findOne({ _id: this.id }))?.queued ?? 0;
  }
}
