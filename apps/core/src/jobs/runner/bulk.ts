import { isDuplicateKeyError } from "@rms/proto";
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db, type Filter } from "mongodb";
import type { Tenant } from "../../caller.js";
import { deleteDecision, matchingFilter, updateDecision, type ItemDecision, type MarkedResource } from "../../resources/batch.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { WITHOUT_OUTBOX, type Loaded } from "../../storage/documents.js";
import type { Expiring } from "../../storage/expiry.js";
import { filterOf, updateOf, type JobItemError } from "../model.js";
import { recordErrors } from "./errors-record.js";
import { newOutput, resultsFileResult, settleOutput, writePart } from "./output.js";
import { ContentionError } from "./transient.js";
import { updateWithEvents } from "./with-events.js";
import type { Checkpoint, Executor, JobRun } from "./seam.js";

/** Ids per snapshot page (one `job_items` document each, one step and checkpoint of the filter pass). */
export const PAGE_SIZE = 1_000;
/** Items per chunk: one read, one unordered `bulkWrite` and one checkpoint each; divides PAGE_SIZE. */
export const BULK_CHUNK = 250;
/** Rounds of a chunk whose versioned writes lost races before the chunk counts as a transient failure. */
const MAX_ROUNDS = 64;

export const JOB_ITEMS_COLLECTION = "job_items";

/** One page of a bulk job's items: the ids matching its filter when it started, in id order. */
export interface JobItemsPage extends Expiring {
  _id: string;
  job: string;
  page: number;
  ids: string[];
}

const NO_REQUEST = { requestId: null, idempotencyKey: null };

/** A results line's `outcome` for an item the job applied (or had applied before a takeover). */
const DONE_OUTCOME = { update: "updated", delete: "deleted" } as const;

type Decide = (doc: Loaded<MarkedResource> | null, job: string, tenant: Tenant) => ItemDecision;

/**
 * `resources.bulk_update` and `resources.bulk_delete`. First the filter is evaluated once, one page of
 * PAGE_SIZE ids per step (each a checkpoint), into `job_items` (a page's `_id` is `<job>:<page>`: a page
 * redone after a takeover finds the one written first and goes on after its last id, so the items never
 * change once recorded; resources made after the job started are outside the bound). Then each chunk of items is read in one query,
 * decided per item by the resource rules (resources/batch.ts), and written with one unordered
 * `bulkWrite` of versioned updates that also mark the resource with the job id: a takeover that
 * redoes the chunk sees the mark and does not apply the change again. A bulk update's writes and their
 * `resource.updated` events go in one transaction (with-events.ts); a bulk delete's tombstones carry their
 * `resource.deleted` events in their outboxes (the relay's pull starts a tombstone's expiry).
 */
export function bulkExecutor(kind: "update" | "delete", chunk = BULK_CHUNK): Executor {
  return {
    async step(run, state) {
      const snapshot = state.snapshot!;
      if (!snapshot.complete) return snapshotPage(run, state);
      if (state.next >= snapshot.total) return null;
      const update = kind === "update" ? updateOf(run.job.params) : undefined;
      const decide: Decide = update
        ? (doc, job, tenant) => updateDecision(doc, update, job, tenant, NO_REQUEST)
        : (doc, job, tenant) => deleteDecision(doc, job, tenant, NO_REQUEST);
      const ids = await chunkIds(run.db, run.job._id, state.next, Math.min(chunk, snapshot.total - state.next));
      const outcome = await applyChunk(run, ids, decide, kind === "update" ? writeWithEvents : writeWithOutbox);
      const failed: JobItemError[] = [];
      const lines: string[] = [];
      let done = 0;
      let skipped = 0;
      ids.forEach((id, i) => {
        const result = outcome[i]!;
        if (result.kind === "done") {
          done++;
          lines.push(JSON.stringify({ id, outcome: DONE_OUTCOME[kind] }));
        } else if (result.kind === "skipped") {
          skipped++;
          lines.push(JSON.stringify({ id, outcome: "skipped" }));
        } else {
          failed.push({ index: state.next + i, id, ...result.error });
          lines.push(JSON.stringify({ id, code: result.error.code, param: result.error.param, message: result.error.message }));
        }
      });
      // The chunk's results lines, as part `parts` of the results file (a redo after a takeover writes it again in place).
      const output = await writePart(run, state.output ?? newOutput(run, "job_results", "jsonl"), Buffer.from(`${lines.join("\n")}\n`));
      const errors = await recordErrors(run.db, run.job, state, failed);
      return {
        ...state,
        next: state.next + ids.length,
        done: state.done + done,
        skipped: state.skipped + skipped,
        failed: state.failed + failed.length,
        errors,
        output,
      };
    },
    async finish(run, state) {
      // The results of the items done, whatever the outcome (a canceled job's too: each line is a committed change).
      return resultsFileResult(await settleOutput(run, state, "finish"));
    },
  };
}

/** The `_id` of a snapshot page of a job. */
export function pageId(job: string, page: number): string {
  return `${job}:${page}`;
}

/**
 * One chunk of the filter pass: the next PAGE_SIZE matches after the last id taken (one query walking the
 * filter's index by `_id`, `matchingFilter` of resources/batch.ts), written as one `job_items` page, then
 * the checkpoint: cancel and SIGTERM take effect within one page however many resources match. A page
 * already written by an attempt before a takeover wins: its ids are kept and the pass goes on after its
 * last id. A page shorter than PAGE_SIZE (or none) completes the items: every page but the last holds
 * PAGE_SIZE ids, so item i is at page i / PAGE_SIZE.
 */
async function snapshotPage(run: JobRun, state: Checkpoint): Promise<Checkpoint> {
  const snapshot = state.snapshot!;
  const tenant: Tenant = { account: run.job.account, livemode: run.job.livemode };
  const matches = await run.db
    .collection<MarkedResource>(RESOURCES_COLLECTION)
    .find(matchingFilter(tenant, filterOf(run.job.params), snapshot.last, snapshot.bound), { projection: { _id: 1 } })
    .sort({ _id: 1 })
    .limit(PAGE_SIZE)
    .toArray();
  if (matches.length === 0) return { ...state, snapshot: { ...snapshot, complete: true } };
  const page: JobItemsPage = { _id: pageId(run.job._id, snapshot.pages), job: run.job._id, page: snapshot.pages, ids: matches.map((doc) => doc._id) };
  const pages = run.db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION);
  let kept = page.ids;
  try {
    await pages.insertOne(page);
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    // Written by an attempt before a takeover: that one is the page (the matches may have moved since).
    kept = (await pages.findOne({ _id: page._id }))!.ids;
  }
  return {
    ...state,
    snapshot: { ...snapshot, pages: snapshot.pages + 1, last: kept.at(-1)!, total: snapshot.total + kept.length, complete: kept.length < PAGE_SIZE },
  };
}

async function chunkIds(db: Db, job: string, from: number, count: number): Promise<string[]> {
  const page = await db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION).findOne({ _id: pageId(job, Math.floor(from / PAGE_SIZE)) });
  if (!page) throw new Error(`job ${job}: page of item ${from} is missing`);
  const start = from % PAGE_SIZE;
  return page.ids.slice(start, start + count);
}

type Outcome = { kind: "done" } | { kind: "skipped" } | { kind: "failed"; error: { code: string; param: string | null; message: string } };

type Write = Extract<ItemDecision, { kind: "write" }>;

/**
 * How a round's decided writes go to the database: answers those refused (by position) and which landed (their ids),
 * or null when every write matched (each landed).
 */
type WriteRound = (
  run: JobRun,
  resources: Collection<MarkedResource>,
  writes: readonly { id: string; write: Write }[],
) => Promise<{ refused: Map<number, string>; landed: Set<string> | null }>;

/**
 * A bulk update's writes with their events in one transaction (with-events.ts): no outbox, nothing for a relay to
 * copy or pull.
 */
const writeWithEvents: WriteRound = async (run, _resources, writes) => {
  const { applied, refused } = await updateWithEvents(
    run,
    writes.map(({ id, write }) => ({ id, op: write.direct, event: write.event })),
  );
  return { refused, landed: applied.size === writes.length - refused.size ? null : applied };
};

/**
 * A bulk delete's tombstones with their events in their outboxes (the relay's pull starts each tombstone's expiry:
 * storage/relay.ts), one unordered `bulkWrite`.
 */
const writeWithOutbox: WriteRound = async (run, resources, writes) => {
  const { refused, matched } = await writeAll(
    resources,
    writes.map((w) => w.write.op),
  );
  run.written(
    RESOURCES_COLLECTION,
    writes.map((w) => w.id),
  );
  return { refused, landed: matched === writes.length ? null : new Set() };
};

/**
 * Applies one chunk: read the items, decide each, write the changes (`writeRound`); items whose versioned write lost a
 * race (changed meanwhile) are read and decided again, so the job's change is merged on top of their current state.
 * Returns each item's outcome, in order.
 */
async function applyChunk(run: JobRun, ids: readonly string[], decide: Decide, writeRound: WriteRound): Promise<Outcome[]> {
  const tenant: Tenant = { account: run.job.account, livemode: run.job.livemode };
  const resources = run.db.collection<MarkedResource>(RESOURCES_COLLECTION);
  const outcome: (Outcome | undefined)[] = ids.map(() => undefined);
  let open = ids.map((_, i) => i);
  for (let round = 0; open.length > 0; round++) {
    if (round === MAX_ROUNDS) throw new ContentionError(`job ${run.job._id}: chunk kept losing races`);
    const docs = await readAll(
      resources,
      tenant,
      open.map((i) => ids[i]!),
    );
    const writes: { item: number; id: string; write: Write }[] = [];
    for (const i of open) {
      const decision = decide(docs.get(ids[i]!) ?? null, run.job._id, tenant);
      if (decision.kind === "write") writes.push({ item: i, id: ids[i]!, write: decision });
      else outcome[i] = decision;
    }
    if (writes.length === 0) break;
    const { refused, landed } = await writeRound(run, resources, writes);
    for (const [position, message] of refused) outcome[writes[position]!.item] = { kind: "failed", error: { code: "write_failed", param: null, message } };
    // Every versioned write matched: each landed (the usual case, no second read).
    if (landed === null) break;
    // Those not refused are decided again from what the database holds now (the mark shows which landed).
    open = writes.filter((w, position) => !refused.has(position) && !landed.has(w.id)).map((w) => w.item);
  }
  return outcome.map((o) => o ?? { kind: "done" });
}

/** The chunk's resources of the tenant by id (tombstones included: a mark on one tells the job deleted it). */
async function readAll(resources: Collection<MarkedResource>, tenant: Tenant, ids: readonly string[]): Promise<Map<string, Loaded<MarkedResource>>> {
  const docs = (await resources.find({ _id: { $in: [...ids] } } as Filter<MarkedResource>, WITHOUT_OUTBOX).toArray()) as Loaded<MarkedResource>[];
  return new Map(docs.filter((d) => d.account === tenant.account && d.livemode === tenant.livemode).map((d) => [d._id, d]));
}

/** One unordered `bulkWrite`; a refused operation (other than a lost race, which matches nothing) fails its item only. */
async function writeAll(
  resources: Collection<MarkedResource>,
  ops: AnyBulkWriteOperation<MarkedResource>[],
): Promise<{ refused: Map<number, string>; matched: number }> {
  const refused = new Map<number, string>();
  try {
    const result = await resources.bulkWrite(ops, { ordered: false });
    return { refused, matched: result.matchedCount };
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError) || error.writeConcernError) throw error;
    const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    if (writeErrors.length === 0) throw error;
    for (const w of writeErrors) refused.set(w.index, "The database refused this item's change.");
  }
  return { refused, matched: -1 };
}
