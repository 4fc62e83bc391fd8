import { randomBytes } from "node:crypto";
import { GATEWAY_IDEMPOTENCY_COLLECTION, isDuplicateKeyError } from "@rms/proto";
import { Binary, type Collection, type Db } from "mongodb";
import type { Logger } from "pino";
import { ApiError } from "../errors.js";
import { dropRetiredIndex } from "../indexes.js";
import { LOCK_TIMEOUT_MS, RETENTION_MS, scopeId, type BeginResult, type IdempotencyLease, type IdempotencyScope, type IdempotencyStore, type RecordedResponse } from "./store.js";

/** One record of the `idempotency_keys` collection. */
interface IdempotencyRecord {
  /** `<account>/<live|test>/<Idempotency-Key>` (the scope id shared with core): the unique index that makes the lock exclusive. */
  _id: string;
  account: string;
  livemode: boolean;
  fingerprint: string;
  /** First use (a takeover of a stale lock keeps it). */
  created: Date;
  /**
   * When the record goes: `created` + `RETENTION_MS`, or the end of the lock if that is later, so that a record
   * never expires while its lock is held. The TTL index `expires_at` deletes it then; `begin` treats a record
   * past it as absent until the TTL monitor has run. Absent only on records written before the field existed
   * (`ensureIndexes` gives them theirs).
   */
  expires_at?: Date;
  /** The lock holder (random per attempt) and the end of its lock. */
  owner: string;
  locked_until: Date;
  completed: boolean;
  status?: number;
  body?: Binary;
  /** The answer's headers (but the per-request ones), as pairs: header names are data, never field names. */
  headers?: { name: string; value: string | string[] }[];
  request_id: string;
}

/** Named in @rms/proto: core reads a record by `_id` before it records a create's answer under the key itself. */
export const IDEMPOTENCY_COLLECTION = GATEWAY_IDEMPOTENCY_COLLECTION;
/** Rounds of insert / take-over before giving up (each round means another request won a race). */
const MAX_ROUNDS = 5;

export interface MongoIdempotencyOptions {
  readonly lockTimeoutMs?: number;
  readonly retentionMs?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
}

/**
 * Idempotency records in MongoDB, built on single-document atomic writes: the
 * lock is an `insertOne` under the unique `_id`, a stale lock is taken over
 * with a conditional `deleteOne` followed by a new insert. Only the final
 * "record the response" step is an update, guarded by the owner token. Every
 * write is acknowledged by a majority, journaled (the client's write concern,
 * stores.ts). Retention is a TTL index, not a sweep of ours.
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

  /**
   * The TTL index that deletes a record at its `expires_at`. MongoDB's TTL monitor runs every 60 s, so a
   * record goes up to about a minute after that (`begin` already treats it as absent). A record whose lock is
   * held is never past its `expires_at` (which is at least `locked_until`), so TTL cannot remove it mid-request;
   * besides, 24 h is far above the longest request (the lock lasts 30 s).
   */
  async ensureIndexes(): Promise<void> {
    await this.records.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
    // Records written before `expires_at` existed get theirs, so the TTL index removes them too. A missing field
    // is indexed as null, so this reads only those records.
    await this.records.updateMany({ expires_at: { $exists: false } }, [{ $set: { expires_at: { $max: [{ $add: ["$created", this.retentionMs] }, "$locked_until"] } } }]);
    // The index of the periodic deleteMany that the TTL index replaced.
    await dropRetiredIndex(this.records, "created");
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
      const firstUse = created ?? new Date(now);
      const lockedUntil = new Date(now + this.lockTimeoutMs);
      try {
        await this.records.insertOne({
          _id,
          account: scope.accountId,
          livemode: scope.livemode,
          fingerprint,
          created: firstUse,
          expires_at: new Date(Math.max(firstUse.getTime() + this.retentionMs, lockedUntil.getTime())),
          owner,
          locked_until: lockedUntil,
          completed: false,
          request_id: requestId,
        });
        return { kind: "acquired", lease: this.lease(_id, owner) };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      const existing = await this.records.findOne({ _id });
      if (!existing) continue; // removed in between (expired or taken over): try to insert again
      if (this.expiryOf(existing) < now) {
        // Past its retention, not yet deleted by the TTL monitor: as good as absent. Deleted by its owner
        // token, so only the record read here goes, never one inserted since.
        await this.records.deleteOne({ _id, owner: existing.owner });
        continue;
      }
      if (existing.fingerprint !== fingerprint) {
        throw ApiError.standard("idempotency_key_reused");
      }
      if (existing.completed && existing.status !== undefined && existing.body !== undefined) {
        const response = { status: existing.status, body: Buffer.from(existing.body.buffer), requestId: existing.request_id };
        return { kind: "replay", response: existing.headers ? { ...response, headers: existing.headers } : response };
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
          {
            $set: {
              completed: true,
              status: response.status,
              body: new Binary(response.body),
              ...(response.headers ? { headers: response.headers.map(({ name, value }) => ({ name, value: typeof value === "string" ? value : [...value] })) } : {}),
              request_id: response.requestId,
            },
          },
        );
      },
      release: async () => {
        await this.records.deleteOne({ _id, owner, completed: false });
      },
    };
  }

  /** When a record expires; one written before `expires_at` existed lacks it and expires `retentionMs` after first use. */
  private expiryOf(record: IdempotencyRecord): number {
    return record.expires_at?.getTime() ?? record.created.getTime() + this.retentionMs;
  }

  async close(): Promise<void> {}
}
