import { MongoServerError, type ChangeStream, type ChangeStreamInsertDocument, type Collection, type Document, type ResumeToken } from "mongodb";
import { clusterTimeNow, clusterTimeOf, STREAM_READ_CONCERN } from "./cluster-time.js";
import { POSITION_FIELD } from "./positioned-insert.js";

/** One message of a watch: documents in commit order, the token to resume after it, the commit time it covers. */
export interface WatchMessage<D> {
  readonly documents: D[];
  readonly resumeToken: ResumeToken | null;
  /** BSON timestamp as 64 bits: every document committed at or before it is in this message or an earlier one; 0n: unchanged. */
  readonly clusterTime: bigint;
}

/** A watch asked to resume from a token the database cannot resume from (malformed, or its history left the oplog). */
export class ResumeTokenLost extends Error {
  constructor() {
    super("The database cannot resume a watch from this token (its history is gone): start a new watch.");
    this.name = "ResumeTokenLost";
  }
}

/** How often a quiet watch sends its latest resume token (a heartbeat). */
export const WATCH_HEARTBEAT_MS = 10_000;
/** How long one wait for a change lasts on the server (the watch looks at its caller between waits). */
const WATCH_AWAIT_MS = 1_000;
/** Codes of a change stream that cannot go on from where it is: its history left the oplog, or the token is bad. */
const TOKEN_LOST = new Set([260, 280, 286]);

/**
 * Every positioned document inserted into `collection` from now on (or after `resumeToken`), of every tenant, in
 * commit order (a change stream at majority: docs/streams.md): first the start (no documents; a token and the time it
 * starts at, so reads after that time see everything before it), then the documents as they commit, and a heartbeat
 * with the latest token every WATCH_HEARTBEAT_MS while quiet. Ends when `signal` aborts. A token the database cannot
 * resume from is `ResumeTokenLost`: the caller starts afresh and catches up by position.
 */
export async function* watchPositioned<D extends Document>(
  collection: Collection<D>,
  resumeToken: ResumeToken | null,
  signal: { readonly aborted: boolean },
): AsyncGenerator<WatchMessage<D>> {
  const start = resumeToken ? null : await clusterTimeNow(collection.db.client);
  // A change stream reads at majority whatever its client's read concern.
  const majority = collection.db.collection<D>(collection.collectionName, { readConcern: STREAM_READ_CONCERN });
  const stream: ChangeStream<D, ChangeStreamInsertDocument<D>> = majority.watch(
    [{ $match: { operationType: "insert", [`fullDocument.${POSITION_FIELD}`]: { $exists: true } } }],
    {
      ...(resumeToken ? { resumeAfter: resumeToken } : { startAtOperationTime: start! }),
      maxAwaitTimeMS: WATCH_AWAIT_MS,
    },
  );
  try {
    // The first wait opens the stream on the server, so the start message carries a token it can resume from. The
    // server refusing to open it from the token given makes that token useless.
    let change = await nextChange(stream).catch((error: unknown) => {
      if (resumeToken && error instanceof MongoServerError && !error.hasErrorLabel("ResumableChangeStreamError")) throw new ResumeTokenLost();
      throw error;
    });
    yield { documents: [], resumeToken: stream.resumeToken ?? resumeToken, clusterTime: start ? clusterTimeOf(start) : 0n };
    let beat = Date.now();
    while (!signal.aborted) {
      if (change) {
        yield { documents: [change.fullDocument], resumeToken: change._id, clusterTime: clusterTimeOf(change.clusterTime) };
        beat = Date.now();
      } else if (Date.now() - beat >= WATCH_HEARTBEAT_MS) {
        yield { documents: [], resumeToken: stream.resumeToken, clusterTime: 0n };
        beat = Date.now();
      }
      change = await nextChange(stream);
    }
  } finally {
    await stream.close().catch(() => undefined);
  }
}

/** The next change, or null after one wait with none. */
async function nextChange<C extends Document>(stream: ChangeStream<Document, C>): Promise<C | null> {
  try {
    return await stream.tryNext();
  } catch (error) {
    if (error instanceof MongoServerError && TOKEN_LOST.has(error.code as number)) throw new ResumeTokenLost();
    throw error;
  }
}
