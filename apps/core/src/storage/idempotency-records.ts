import { randomBytes } from "node:crypto";
import { IDEMPOTENCY_RETENTION_MS, isDuplicateKeyError } from "@rms/proto";
import type { Binary, Collection, Db, MongoClient } from "mongodb";
import { UNBOUNDED, type Budget } from "../budget.js";
import { writeWithin } from "./write.js";

/**
 * Core's idempotency records: one document per account + mode + Idempotency-Key, which decides for every call
 * made under a key whether it runs, is replayed, is refused as reused or is in flight (docs/idempotency-and-limits.md;
 * run around every declared RPC by grpc/idempotent.ts). Built on single-document atomic writes: the lock is an
 * `insertOne` under the unique `_id`, a stale lock is taken over with a conditional `deleteOne` and a new insert,
 * and the answer is recorded by an `updateOne` guarded by the holder's token (inside the call's transaction for a
 * call in one commit). Retention is a TTL index.
 */
export const IDEMPOTENCY_RECORDS_COLLECTION = "idempotency_keys";

/** How long a lock blocks repeats when its call has no deadline (a call with one holds it until then, plus a margin). */
export const LOCK_TIMEOUT_MS = 30_000;
/** How long past its call's deadline a lock holds: a write sent just before the deadline ends within it. */
export const LOCK_MARGIN_MS = 5_000;
/** A release waits this long at most (a lock it could not remove ends by itself). */
const RELEASE_TIMEOUT_MS = 5_000;
/** Looks at a held lock, IN_FLIGHT_LOOK_MS apart, before a repeat is answered in flight (its answer may be on its way). */
const IN_FLIGHT_LOOKS = 3;
const IN_FLIGHT_LOOK_MS = 15;
/** Rounds of insert / take-over before giving up (each round means another request won a race). */
const MAX_ROUNDS = 5;

/** An error answer, recorded as the catalogue's words (code, message, param). */
export interface RecordedError {
  code: string;
  message: string;
  param: string;
}

/** What a call answered, as recorded. */
export interface RecordedAnswer {
  /** The reply message's bytes (protobuf binary), or its sealed text when the answer holds a secret. */
  reply?: Binary | string;
  error?: RecordedError;
  /** The headers the caller gave for its answer (opaque JSON text). */
  headers: string;
}

/** One record. */
export interface IdempotencyRecord {
  /** `<account>/<live|test>/<key>` (`idempotencyScopeId`). */
  _id: string;
  account: string;
  livemode: boolean;
  /** The caller's fingerprint of the request: another fingerprint under the key is `idempotency_key_reused`. */
  fingerprint: string;
  /** First use (a takeover of a stale lock keeps it). */
  created: Date;
  /** `created` + 24 h, or the end of the lock if later: the TTL index deletes the record then. */
  expires_at: Date;
  /** The lock holder (random per attempt) and the end of its lock. */
  owner: string;
  locked_until: Date;
  completed: boolean;
  /** The request that holds or held the lock, and once completed the one whose answer is recorded. */
  request_id: string;
  /** The recorded answer, once completed. */
  answer?: RecordedAnswer;
}

/** A completed record: the one a repeat is answered from. */
export type CompletedRecord = IdempotencyRecord & { readonly answer: RecordedAnswer };

/** Whose key: the scope id, and the tenant for the record's own fields. */
export interface KeyScope {
  readonly id: string;
  readonly account: string;
  readonly livemode: boolean;
}

/** The lock on a key, held while the call executes. */
export interface IdempotencyLease {
  /** The key's first use (a takeover of a stale lock keeps it): the same for a retry after a crash. */
  readonly created: Date;
  /** Records the answer and ends the lock; later repeats replay it. */
  complete(answer: RecordedAnswer, requestId: string, budget?: Budget): Promise<void>;
  /**
   * Records the answer inside the caller's transaction (the budget's session), committed with the call's writes.
   * False when another holder took the lock over (past its end): the transaction must not commit.
   */
  completeWithin(answer: RecordedAnswer, requestId: string, budget: Budget): Promise<boolean>;
  /** Ends the lock without recording anything, so the key can be used again. */
  release(): Promise<void>;
  /** Holds the lock `lockMs` from now (a streamed upload's, while its bytes keep coming); false if another holder took it over. */
  extend(lockMs: number, budget?: Budget): Promise<boolean>;
}

/** What a key holds when its lock could not be taken. */
type Found = { readonly kind: "replay"; readonly record: CompletedRecord } | { readonly kind: "reused" } | { readonly kind: "inFlight" };

export type BeginResult = { readonly kind: "acquired"; readonly lease: IdempotencyLease } | Found;

/** What `begin` does next after reading the record its insert collided with. */
type Next = Found | { readonly kind: "again"; readonly created?: Date } | { readonly kind: "look" };

export interface RecordsOptions {
  readonly retentionMs?: number;
  readonly now?: () => number;
}

export class IdempotencyRecords {
  private readonly records: Collection<IdempotencyRecord>;
  private readonly retentionMs: number;
  private readonly now: () => number;

  /** The client whose sessions hold the transactions an answer is recorded in (grpc/idempotent.ts). */
  readonly client: MongoClient;

  constructor(db: Db, options: RecordsOptions = {}) {
    this.client = db.client;
    this.records = db.collection<IdempotencyRecord>(IDEMPOTENCY_RECORDS_COLLECTION);
    this.retentionMs = options.retentionMs ?? IDEMPOTENCY_RETENTION_MS;
    this.now = options.now ?? Date.now;
  }

  /**
   * The TTL index that deletes a record at its `expires_at` (MongoDB's TTL monitor runs every 60 s; `begin`
   * treats a record past it as absent meanwhile). A held lock is never past `expires_at` (at least `locked_until`).
   */
  async ensureIndexes(): Promise<void> {
    await this.records.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
  }

  /**
   * Takes the lock for a key, or finds what the key holds: the recorded answer of the same request (`replay`), a
   * record of another request (`reused`, whatever its state), or the same request still executing (`inFlight`).
   * `lockMs`: how long the lock blocks repeats if its holder never completes or releases it.
   */
  async begin(scope: KeyScope, fingerprint: string, requestId: string, lockMs: number, budget: Budget = UNBOUNDED): Promise<BeginResult> {
    let created: Date | undefined;
    let looks = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const record = this.newRecord(scope, fingerprint, requestId, lockMs, created);
      try {
        await writeWithin(budget, (options) => this.records.insertOne(record, options));
        return { kind: "acquired", lease: this.lease(record._id, record.owner, record.created) };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      const next = await this.afterCollision(scope.id, fingerprint, budget, looks);
      if (next.kind === "look") {
        looks++;
        round--;
        continue;
      }
      if (next.kind !== "again") return next;
      created = next.created ?? created;
    }
    return { kind: "inFlight" };
  }

  /** A record to insert as the lock: `created` is the key's first use (now, or the stale lock's it takes over). */
  private newRecord(scope: KeyScope, fingerprint: string, requestId: string, lockMs: number, created: Date | undefined): IdempotencyRecord {
    const now = this.now();
    const firstUse = created ?? new Date(now);
    const lockedUntil = new Date(now + lockMs);
    return {
      _id: scope.id,
      account: scope.account,
      livemode: scope.livemode,
      fingerprint,
      created: firstUse,
      expires_at: new Date(Math.max(firstUse.getTime() + this.retentionMs, lockedUntil.getTime())),
      owner: randomBytes(12).toString("base64url"),
      locked_until: lockedUntil,
      completed: false,
      request_id: requestId,
    };
  }

  /**
   * Reads what a lock's insert collided with and decides: the recorded answer of the same request, another request
   * (`reused`, whatever its state), the same one still executing, or try again (a record past its retention or a
   * stale lock removed here, keeping the stale lock's first use). `look`: nothing committed is there (removed in
   * between, or held by a transaction not yet committed): look again shortly, `looks` times at most.
   */
  private async afterCollision(_id: string, fingerprint: string, budget: Budget, looks: number): Promise<Next> {
    const now = this.now();
    const existing = await this.records.findOne({ _id }, budget.db());
    if (!existing) return looks < IN_FLIGHT_LOOKS ? pause({ kind: "look" }) : { kind: "inFlight" };
    if (existing.expires_at.getTime() < now) {
      // Past its retention, not yet deleted by the TTL monitor: as good as absent. Deleted by its owner token,
      // so only the record read here goes, never one inserted since.
      await writeWithin(budget, (options) => this.records.deleteOne({ _id, owner: existing.owner }, options));
      return { kind: "again" };
    }
    if (existing.fingerprint !== fingerprint) return { kind: "reused" };
    if (existing.completed && existing.answer !== undefined) return { kind: "replay", record: existing as CompletedRecord };
    if (existing.locked_until.getTime() >= now) {
      // The holder may have answered already and be recording its answer: a few short looks before calling it in flight.
      return looks < IN_FLIGHT_LOOKS ? pause({ kind: "look" }) : { kind: "inFlight" };
    }
    // A lock left behind (its holder died or is far past its deadline): take it over. deleteOne is atomic, so of
    // several retries at most one removes it; the insert decides the new holder.
    await writeWithin(budget, (options) => this.records.deleteOne({ _id, locked_until: { $lt: new Date(now) }, completed: false }, options));
    return { kind: "again", created: existing.created };
  }

  private lease(_id: string, owner: string, created: Date): IdempotencyLease {
    return {
      created,
      complete: async (answer, requestId, budget = UNBOUNDED) => {
        await writeWithin(budget, (options) =>
          this.records.updateOne({ _id, owner, completed: false }, { $set: { completed: true, answer, request_id: requestId } }, options),
        );
      },
      completeWithin: async (answer, requestId, budget) => {
        const result = await writeWithin(budget, (options) =>
          this.records.updateOne({ _id, owner, completed: false }, { $set: { completed: true, answer, request_id: requestId } }, options),
        );
        return result.matchedCount === 1;
      },
      release: async () => {
        await this.records.deleteOne({ _id, owner, completed: false }, { timeoutMS: RELEASE_TIMEOUT_MS });
      },
      extend: async (lockMs, budget = UNBOUNDED) => {
        const lockedUntil = new Date(this.now() + lockMs);
        const held = await writeWithin(budget, (options) =>
          this.records.updateOne({ _id, owner, completed: false }, { $set: { locked_until: lockedUntil }, $max: { expires_at: lockedUntil } }, options),
        );
        return held.matchedCount === 1;
      },
    };
  }

  /** Whether the key has a record still in force (held, or completed within its retention). */
  async has(scopeId: string): Promise<boolean> {
    const record = await this.records.findOne({ _id: scopeId }, { projection: { expires_at: 1 } });
    return record !== null && record.expires_at.getTime() >= this.now();
  }
}

/** Waits a short look's time, then answers `next`. */
async function pause<T>(next: T): Promise<T> {
  await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_LOOK_MS));
  return next;
}
