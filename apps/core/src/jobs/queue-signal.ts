import type { Db } from "mongodb";

/**
 * The jobs queue's counter document: a create adds one, idle workers read it (one document by `_id`)
 * every few ms and look for work at once when it moved, instead of waiting for their next full look
 * (a read of up to 200 unfinished jobs, made once a second when idle).
 */
export const JOBS_QUEUE_COLLECTION = "jobs_queue";
const SIGNAL_ID = "queued";

/** Tells idle workers a job was queued. Losing it (a slow database, two first upserts racing) costs one poll of latency. */
export async function signalJobQueued(db: Db): Promise<void> {
  try {
    await db.collection<{ _id: string; queued: number }>(JOBS_QUEUE_COLLECTION).updateOne({ _id: SIGNAL_ID }, { $inc: { queued: 1 } }, { upsert: true, timeoutMS: 5_000 });
  } catch {
    // The job is queued all the same; workers find it by their periodic look.
  }
}

/** The counter now (0 before the first create). */
export async function jobQueueSignal(db: Db): Promise<number> {
  return (await db.collection<{ _id: string; queued: number }>(JOBS_QUEUE_COLLECTION).findOne({ _id: SIGNAL_ID }))?.queued ?? 0;
}
