import { Timestamp, type ClientSession, type MongoClient } from "mongodb";

/**
 * A BSON timestamp as one unsigned 64-bit number (seconds in the high 32 bits, the increment in the low 32), the form
 * it crosses gRPC in. 0n: none.
 */
export function clusterTimeOf(timestamp: Timestamp | undefined | null): bigint {
  return timestamp ? (BigInt(timestamp.t) << 32n) | BigInt(timestamp.i) : 0n;
}

/** The timestamp of `clusterTimeOf`, or undefined for 0n. */
export function timestampOf(clusterTime: bigint): Timestamp | undefined {
  return clusterTime === 0n ? undefined : new Timestamp({ t: Number(clusterTime >> 32n), i: Number(clusterTime & 0xffffffffn) });
}

/**
 * Runs `read` in a causally consistent session whose reads see at least every write committed at or before
 * `clusterTime` (majority read concern with `afterClusterTime`): a stream that has been handed events up to that
 * time by a change stream reads everything before them. Later reads of the session see what earlier ones saw.
 */
export async function readCausally<T>(client: MongoClient, clusterTime: bigint, read: (session: ClientSession) => Promise<T>): Promise<T> {
  const session = client.startSession({ causalConsistency: true });
  try {
    const after = timestampOf(clusterTime);
    if (after) session.advanceOperationTime(after);
    return await read(session);
  } finally {
    await session.endSession();
  }
}

/** The read concern of a stream's reads (with `readCausally`'s session): majority, so nothing read is ever rolled back. */
export const STREAM_READ_CONCERN = { level: "majority" } as const;

/** The database's cluster time now (the operation time of a `ping`): a watch that starts at it misses nothing after it. */
export async function clusterTimeNow(client: MongoClient): Promise<Timestamp> {
  const answer = await client.db("admin").command({ ping: 1 });
  const time = answer["operationTime"] as Timestamp | undefined;
  if (!(time instanceof Timestamp)) throw new Error("the database answered no operation time (not a replica set?)");
  return time;
}
