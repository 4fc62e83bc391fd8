import { randomBytes } from "node:crypto";
import { isDuplicateKeyError } from "@rms/proto";
import { Binary, type Collection, type Db } from "mongodb";
import type { Logger } from "pino";
import { ApiError } from "../errors.js";
import { LOCK_TIMEOUT_MS, RETENTION_MS, scopeId, type BeginResult, type IdempotencyLease, type IdempotencyScope, type IdempotencyStore, type RecordedResponse } from "./store.js";

/** One record of the `idempotency_keys` collection. */
interface IdempotencyRecord {
  /** `<account>/<live|test>/<Idempotency-Key>` (the scope id shared with core): the unique index that makes the lock exclusive. */
  _id: string;
  account: string;
  livemode: boolean;
  fingerprint: string;
  /** First use; the record is deleted `RETENTION_MS` later. */
  created: Date;
  /** The lock holder (random per attempt) and the end of its lock. */
  owner: string;
  locked_until: Date;
  completed: boolean;
  status?: number;
  body?: Binary;
  request_id: string;
}

export const IDEMPOTENCY_COLLECTION = "idempotency_keys";
/** Rounds of insert / take-over before giving up (each round means another request won a race). */
const MAX_ROUNDS = 5;

export interface MongoIdempotencyOptions {
  readonly lockTimeoutMs?: number;
  readonly retentionMs?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
}

/**
 * Idempotency records in MongoDB, built on the operations that are atomic on
 * every engine we run on (MongoDB, mongo-java-server): the lock is an `insertOne` under
 * the unique `_id`, a stale lock is taken over with a conditional `deleteOne`
 * followed by a new insert. Only the final "record the response" step is an
 * update, guarded by the owner token.
 */
export class MongoIdempotencyStore implements IdempotencyStore {
  private readonly records: Collection<IdempotencyRecord>;
  private readonly lockTimeoutMs: number;
  private readonly retentionMs: number;
  private readonly now: () => number;
  private readonly logger: Logger | undefined;

  constructor(db: Db, options: MongoIdempotencyOptions = {}) {
    this.records = db.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION);
    this.lockTimeoutMs = options.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
    this.retentionMs = options.retentionMs ?? RETENTION_MS;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
  }

  /** The index behind the periodic cleanup (not a TTL index: the test engine has none). */
  async ensureIndexes(): Promise<void> {
    await this.records.createIndex({ created: 1 }, { name: "created" });
  }

  async begin(scope: IdempotencyScope, fingerprint: string, requestId: string): Promise<BeginResult> {
    try {
      return await this.beginOrThrow(scope, fingerprint, requestId);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      this.logger?.warn({ request_id: requestId, err: error instanceof Error ? error.message : String(error) }, "idempotency store unavailable");
      throw ApiError.unavailable();
    }
  }

  private async beginOrThrow(scope: IdempotencyScope, fingerprint: string, requestId: string): Promise<BeginResult> {
    const _id = scopeId(scope);
    let created: Date | undefined;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.now();
      const owner = randomBytes(12).toString("base64url");
      try {
        await this.records.insertOne({
          _id,
          account: scope.accountId,
          livemode: scope.livemode,
          fingerprint,
          created: created ?? new Date(now),
          owner,
          locked_until: new Date(now + this.lockTimeoutMs),
          completed: false,
          request_id: requestId,
        });
        return { kind: "acquired", lease: this.lease(_id, owner) };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      const existing = await this.records.findOne({ _id });
      if (!existing) continue; // removed in between (expired or taken over): try to insert again
      if (existing.created.getTime() < now - this.retentionMs) {
        // Older than the retention period, not yet cleaned up: as good as absent.
        await this.records.deleteOne({ _id, created: { $lt: new Date(now - this.retentionMs) } });
        continue;
      }
      if (existing.fingerprint !== fingerprint) {
        throw new ApiError(
          "idempotency_key_reused",
          "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used on the original request.",
        );
      }
      if (existing.completed && existing.status !== undefined && existing.body !== undefined) {
        return { kind: "replay", response: { status: existing.status, body: Buffer.from(existing.body.buffer), requestId: existing.request_id } };
      }
      if (existing.locked_until.getTime() >= now) {
        throw new ApiError(
          "idempotency_key_in_use",
          "There is currently another in-progress request using this Idempotency-Key (that probably means you submitted twice, and the other request is still going through). Please try again later.",
        );
      }
      // A lock left behind (its holder died or is far past its deadline): take it over.
      // deleteOne is atomic, so of several retries at most one removes it; the insert decides the new holder.
      created = existing.created;
      await this.records.deleteOne({ _id, locked_until: { $lt: new Date(now) }, completed: false });
    }
    throw new ApiError("idempotency_key_in_use", "There is currently another in-progress request using this Idempotency-Key. Please try again later.");
  }

  private lease(_id: string, owner: string): IdempotencyLease {
    return {
      complete: async (response: RecordedResponse) => {
        await this.records.updateOne(
          { _id, owner, completed: false },
          { $set: { completed: true, status: response.status, body: new Binary(response.body), request_id: response.requestId } },
        );
      },
      release: async () => {
        await this.records.deleteOne({ _id, owner, completed: false });
      },
    };
  }

  async removeExpired(): Promise<number> {
    const { deletedCount } = await this.records.deleteMany({ created: { $lt: new Date(this.now() - this.retentionMs) } });
    return deletedCount;
  }

  async close(): Promise<void> {}
}
