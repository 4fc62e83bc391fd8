import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Db, Filter, FindCursor } from "mongodb";
import { traceField } from "@rms/telemetry";
import type { RequestInfo, Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { afterAbort, afterCommit, inATransaction, UNBOUNDED, type Budget } from "../budget.js";
import { newId } from "../ids.js";
import { boundedPage, PAGE_BYTES_MAX } from "../storage/bounded-page.js";
import { findLive, WITHOUT_OUTBOX, type Loaded } from "../storage/documents.js";
import { ensureExpiryIndex } from "../storage/expiry.js";
import { fieldsFingerprint, madeBy140, ownSlot } from "../storage/key-slot.js";
import { ensureKeysetIndexes, keysetIdRange } from "../storage/keyset-list.js";
import { newEvent } from "../storage/outbox.js";
import { DEFAULT_JOBS_QUEUED_PER_ACCOUNT } from "../settings.js";
import { writeWithin } from "../storage/write.js";
import {
  isFinished,
  JOB_ERRORS_COLLECTION,
  JOBS_COLLECTION,
  JOBS_QUEUE,
  jobRetainUntil,
  resultCountName,
  type JobDocument,
  type JobErrorDocument,
  type JobEvent,
  type JobStatus,
  type JobType,
  type RequestedParams,
  type TypedParams,
} from "./model.js";
import type { JobFiles } from "./files.js";
import { itemsAsJsonl } from "./rows/inline.js";
import { importFileOf } from "./import-file.js";
import { PreviewGate, previewJob, type JobPreview } from "./preview.js";
import { ensureQueueSlotIndex, freeQueueSlots, QUEUE_SLOT_RELEASE } from "./queue-limit.js";
import { jobSnapshot } from "./render.js";

/** A job as reads load it (without its outbox). */
export type LoadedJob = Loaded<JobDocument>;

export interface JobListQuery {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
  status?: JobStatus;
  type?: JobType;
  created: { gt?: number; gte?: number; lt?: number; lte?: number };
}

export interface ErrorListQuery {
  limit: number;
  startingAfter?: number;
  endingBefore?: number;
}

/** A list page stops adding jobs once their params and results pass this many bytes as JSON (storage/bounded-page.ts). */
export const LIST_PAGE_PARAMS_BYTES = PAGE_BYTES_MAX;

/** What a job adds to a list page, about: its params and its result as JSON (the rest is a few hundred bytes). */
function jobBytes(job: LoadedJob): number {
  return JSON.stringify(job.params).length + JSON.stringify(job.result).length;
}

/**
 * A create's outcome: the job (`replayed`: one a 1.4.0 core made under the same key, storage/key-slot.ts), another
 * request under a key 1.4.0 used (`conflict`), or refused because the tenant holds JOBS_QUEUED_PER_ACCOUNT unfinished
 * jobs already.
 */
export type CreateResult = { doc: LoadedJob; replayed: boolean } | { conflict: true } | { limitReached: true };

/** Retries of a cancel that lost a race with the runner (each loss means the job moved on). */
const CANCEL_ATTEMPTS = 8;

/**
 * Storage of jobs and their item errors, on the shared mechanisms of storage/: the create is one insert
 * (with the key's record under a key), a cancel one single-document write (with its `job.canceled` event in the job's
 * outbox when it finishes the job). The runner (jobs/runner/) writes the rest under its lease.
 */
export class JobStore {
  readonly collection: Collection<JobDocument>;
  readonly errors: Collection<JobErrorDocument>;

  constructor(
    private readonly db: Db,
    private readonly written: (collection: string, id: string) => void = () => {},
    /** JOBS_QUEUED_PER_ACCOUNT: unfinished jobs of one account and mode (queue-limit.ts). */
    readonly queuedPerAccount = DEFAULT_JOBS_QUEUED_PER_ACCOUNT,
    /** File storage (the files domain's side for jobs): an import's input, a job's output files. */
    private readonly files: JobFiles | null = null,
  ) {
    this.collection = db.collection<JobDocument>(JOBS_COLLECTION);
    this.errors = db.collection<JobErrorDocument>(JOB_ERRORS_COLLECTION);
  }

  async ensureIndexes(): Promise<void> {
    // 1.4.0's key slot, which its cores need beside this release's (storage/key-slot.ts).
    await this.collection.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
    await ensureQueueSlotIndex(this.collection);
    await ensureKeysetIndexes(this.collection, ["status", "type"]);
    // The list's status and type filters together (docs/database.md, "Every query has an index").
    await this.collection.createIndex({ account: 1, livemode: 1, status: 1, type: 1, _id: -1 }, { name: "tenant_status_type_order" });
    await this.errors.createIndex({ job: 1, index: 1 }, { name: "job_index" });
    // Retention: a finished job expires 30 days after it finished, once its event is out, and its errors with it.
    await ensureExpiryIndex(this.collection);
    await ensureExpiryIndex(this.errors);
  }

  /**
   * Queues a job in a free place of its tenant's JOBS_QUEUED_PER_ACCOUNT (queue-limit.ts); with none left the answer
   * is `limitReached`. Exactly once under an Idempotency-Key is the key's record's (grpc/idempotent.ts): the insert
   * commits with the record of its answer, in the call's transaction (`budget`), where two creates taking one free
   * place conflict and the call runs again; without one, a place taken meanwhile moves on to the next.
   */
  async create(tenant: Tenant, requested: RequestedParams, request: RequestInfo, budget: Budget = UNBOUNDED): Promise<CreateResult> {
    const fingerprint = () => fieldsFingerprint([requested.type, requested.params]);
    const earlier = await madeBy140(this.collection, tenant, request.idempotencyKey, (first) => first.request_hash === fingerprint(), budget);
    if (earlier) return earlier.sameRequest ? { doc: earlier.doc, replayed: true } : { conflict: true };
    const free = await freeQueueSlots(this.collection, tenant, this.queuedPerAccount, budget);
    if (free.length === 0) return { limitReached: true };
    const nowMs = Date.now();
    const id = newId("job", nowMs);
    const { typed, total } = await this.stored(tenant, requested, id);
    const doc: JobDocument = {
      _id: id,
      account: tenant.account,
      livemode: tenant.livemode,
      version: 0,
      pending_events: [],
      type: typed.type,
      status: "queued",
      params: typed.params,
      progress: { total, processed: 0, failed: 0, skipped: 0 },
      result: null,
      error: null,
      attempts: 0,
      cancel_requested_at: null,
      created: Math.floor(nowMs / 1000),
      started_at: null,
      finished_at: null,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
      ...ownSlot(id),
      // The creating call's trace: the worker's run of the job continues it (jobs/runner/queue.ts).
      ...traceField(),
    };
    const input = "file" in typed.params ? typed.params.file : null;
    if (input !== null) {
      // The input is held before the job exists, so it cannot be reclaimed between the two; given back if the job's
      // transaction aborts (a hold whose job a killed core never wrote stays: docs/files.md, "Holds").
      await this.files!.hold(tenant, input, id);
      afterAbort(budget, () => this.files!.release(tenant, input, id));
    }
    // One free place, chosen at random so that concurrent creates rarely meet, in a transaction (a conflict aborts
    // it); every free place in turn outside one.
    const places = inATransaction(budget) ? [free[Math.floor(Math.random() * free.length)]!] : free;
    for (const queue_slot of places) {
      try {
        await writeWithin(budget, (options) => this.collection.insertOne({ ...doc, queue_slot }, options));
      } catch (error) {
        if (!isDuplicateKeyError(error) || inATransaction(budget)) throw error;
        continue;
      }
      // Idle workers wake on the counter; not awaited: the 201 does not wait for it, and the job is durable already.
      afterCommit(budget, () => void JOBS_QUEUE.signal(this.db));
      const { pending_events: _outbox, ...loaded } = { ...doc, queue_slot };
      return { doc: loaded, replayed: false };
    }
    // No job of this id: its hold ends; a file made of inline items for it then expires at its own retention, like
    // any file no job uses.
    if (input !== null) await this.files!.release(tenant, input, id).catch(() => {});
    return { limitReached: true };
  }

  /**
   * The params a job stores: an inline import's items become a `resources_import` JSONL file (one item per line,
   * so item i is line i + 1), an import's file is checked (the tenant's, of purpose `resources_import`) and a
   * bulk job's or an export's params are kept as they are. No job holds more than a file id and a filter.
   */
  private async stored(tenant: Tenant, requested: RequestedParams, job: string): Promise<{ typed: TypedParams; total: number | null }> {
    if (requested.type !== "resources.import") return { typed: requested, total: null };
    const files = this.files;
    if (!files) throw new Error("jobs: imports need file storage");
    if ("items" in requested.params) {
      const items = requested.params.items;
      // Its id derives from the job's, and the job holds it from the start.
      const made = await files.createImportFile(tenant, itemsAsJsonl(items), "jsonl", { job, filename: "items.jsonl" });
      return { typed: { type: "resources.import", params: { file: made.id } }, total: items.length };
    }
    const file = await importFileOf(files, tenant, requested.params.file);
    return { typed: { type: "resources.import", params: { file: file.id } }, total: null };
  }

  /** Previews running now, per account and mode (preview.ts). */
  private readonly previews = new PreviewGate();

  /** What a job of these params would work on now (preview.ts); stores nothing; 429 past the account's running previews. */
  preview(tenant: Tenant, typed: RequestedParams, budget: Budget = UNBOUNDED): Promise<JobPreview> {
    return this.previews.run(tenant, () => previewJob(this.db, tenant, typed, this.files, budget));
  }

  get(tenant: Tenant, id: string, budget: Budget = UNBOUNDED): Promise<LoadedJob | null> {
    return findLive(this.collection, tenant, id, budget);
  }

  /**
   * Cancels a job (CONTRACT.md section 6): a queued one at once (canceled, `finished_at`, its
   * `job.canceled` event, and its epoch moved on so a worker that has just claimed it can write
   * nothing more); a running one gets `cancel_requested_at` (kept from the first cancel) and the
   * runner finishes it at its next checkpoint; a finished one is 409 `state_conflict`. Each step is
   * one write filtered on the state it was decided from; a lost race reads again.
   * Returns null when the job does not exist for the tenant.
   */
  async cancel(tenant: Tenant, id: string, request: RequestInfo, budget: Budget = UNBOUNDED, now: () => number = Date.now): Promise<LoadedJob | null> {
    for (let attempt = 0; attempt < CANCEL_ATTEMPTS; attempt++) {
      const current = await this.get(tenant, id, budget);
      if (!current) return null;
      if (isFinished(current.status)) {
        throw errors.conflict("state_conflict", `This job has already finished (${current.status}); only a queued or running job can be canceled.`);
      }
      const nowMs = now();
      const at = Math.floor(nowMs / 1000);
      if (current.status === "running") {
        if (current.cancel_requested_at !== null) return current;
        const filter = { _id: id, status: "running", cancel_requested_at: null } as Filter<JobDocument>;
        const result = await writeWithin(budget, (options) =>
          this.collection.updateOne(filter, { $set: { cancel_requested_at: at }, $inc: { version: 1 } }, options),
        );
        if (result.modifiedCount === 1) return { ...current, cancel_requested_at: at, version: current.version + 1 };
        continue;
      }
      const after: LoadedJob = {
        ...current,
        status: "canceled",
        finished_at: at,
        result: { [resultCountName(current.type)]: 0, errors: [] },
        lease_owner: null,
        lease_until: null,
        epoch: current.epoch + 1,
        version: current.version + 1,
      };
      const event: JobEvent = { ...newEvent("job.canceled", tenant, jobSnapshot(after), request, null, nowMs), sequence: after.version };
      const filter = { _id: id, status: "queued", epoch: current.epoch, version: current.version } as Filter<JobDocument>;
      const update = {
        // retain_until: it expires 30 days after it finished, once the relay has copied its event.
        $set: { status: after.status, finished_at: at, result: after.result, lease_owner: null, lease_until: null, retain_until: jobRetainUntil(at) },
        // Its place of JOBS_QUEUED_PER_ACCOUNT is free with this write.
        $unset: QUEUE_SLOT_RELEASE,
        $inc: { epoch: 1, version: 1 },
        $push: { pending_events: event },
      };
      const result = await writeWithin(budget, (options) => this.collection.updateOne(filter, update as never, options));
      if (result.modifiedCount === 1) {
        this.written(JOBS_COLLECTION, id);
        // A queued import's hold on its file ends with it (no worker ever ran it).
        if ("file" in current.params) await this.files?.release(tenant, current.params.file, id).catch(() => {});
        return after;
      }
    }
    throw new Error(`cancel of ${id} kept losing races`);
  }

  /** One page of the tenant's jobs, newest first, by `_id` keyset (data rule 5). */
  async list(tenant: Tenant, query: JobListQuery, budget: Budget = UNBOUNDED): Promise<{ items: LoadedJob[]; hasMore: boolean }> {
    const filter: Record<string, unknown> = { account: tenant.account, livemode: tenant.livemode };
    if (query.status) filter["status"] = query.status;
    if (query.type) filter["type"] = query.type;
    const created: Record<string, number> = {};
    for (const [bound, value] of Object.entries(query.created)) if (value !== undefined) created[`$${bound}`] = value;
    if (Object.keys(created).length > 0) filter["created"] = created;
    const backwards = query.endingBefore !== undefined;
    // The cursor and the `created` range as one range of ids (storage/keyset-list.ts).
    const ids = keysetIdRange("job", query, query.created);
    if (ids) filter["_id"] = ids;
    // Read in batches and stop early: a page of large imports needs only the first few documents.
    const cursor = this.collection.find(filter as Filter<JobDocument>, {
      sort: { _id: backwards ? 1 : -1 },
      limit: query.limit + 1,
      batchSize: Math.min(query.limit + 1, 25),
      ...WITHOUT_OUTBOX,
      ...budget.db(),
    });
    // Params are a file id or a filter (at most 1,000 ids) and a result at most 100 errors, so a job is tens of KB at
    // most; the cut keeps a page of 100 such jobs within one gRPC message.
    const { items: page, hasMore } = await boundedPage(cursor as unknown as FindCursor<LoadedJob>, query.limit, jobBytes, LIST_PAGE_PARAMS_BYTES);
    return { items: backwards ? page.reverse() : page, hasMore };
  }

  /** One page of a job's item errors by index, ascending; the cursors are indexes. */
  async listErrors(job: LoadedJob, query: ErrorListQuery, budget: Budget = UNBOUNDED): Promise<{ items: JobErrorDocument[]; hasMore: boolean }> {
    const filter: Record<string, unknown> = { job: job._id, account: job.account, livemode: job.livemode };
    const backwards = query.endingBefore !== undefined;
    if (query.startingAfter !== undefined) filter["index"] = { $gt: query.startingAfter };
    if (query.endingBefore !== undefined) filter["index"] = { $lt: query.endingBefore };
    const found = await this.errors
      .find(filter as Filter<JobErrorDocument>, { sort: { index: backwards ? -1 : 1 }, limit: query.limit + 1, ...budget.db() })
      .toArray();
    const page = found.slice(0, query.limit);
    return { items: backwards ? page.reverse() : page, hasMore: found.length > query.limit };
  }
}
