import type { Db } from "mongodb";

/** The queue's counter document: fan-out adds the number of deliveries it queued, idle workers read it. */
export const WEBHOOK_QUEUE_COLLECTION = "webhook_queue";
const SIGNAL_ID = "deliveries";

/** Tells idle workers that deliveries were queued (one small upsert; losing it costs at most DELIVERY_FULL_POLL_MS of latency). */
export async function signalQueued(db: Db, count: number): Promise<void> {
  try {
    await db.collection<{ _id: string; queued: number }>(WEBHOOK_QUEUE_COLLECTION).updateOne({ _id: SIGNAL_ID }, { $inc: { queued: count } }, { upsert: true, timeoutMS: 5_000 });
  } catch {
    // Two first upserts racing (duplicate key), or a slow database: the deliveries are queued all the same,
    // and workers find them by their periodic claim.
  }
}

/** The counter now (0 before the first fan-out). */
export async function queueSignal(db: Db): Promise<number> {
  return (await db.collection<{ _id: string; queued: number }>(WEBHOOK_QUEUE_COLLECTION).findOne({ _id: SIGNAL_ID }))?.queued ?? 0;
}
