import { createHash } from "node:crypto";
import { RpcError } from "@rms/proto";
import type { AnyBulkWriteOperation, Filter } from "mongodb";
import type { RequestInfo, Tenant } from "../caller.js";
import { encodeTime } from "../ids.js";
import type { Loaded } from "../storage/documents.js";
import { ownSlot } from "../storage/key-slot.js";
import { newEvent } from "../storage/outbox.js";
import { tombstoneFields } from "../storage/tombstone.js";
import type { MetadataPair, PendingEvent, ResourceDocument, ResourceState, ResourceStatusName } from "./model.js";
import type { ResourceFilter } from "./filter.js";
import { findFilter, nameFields, resourceQuery } from "./filter-query.js";
import { changedFields, stateOf } from "./store.js";
import { mergeMetadata } from "./validation.js";

/**
 * The resource side of bulk work (the jobs runner, jobs/runner/): the documents and single-document
 * writes that the resource rules make for one item, so each item is applied exactly once whatever
 * process dies when. The runner batches them; this module decides them.
 */

/** How many job ids a resource remembers having applied to it (the newest ones). */
export const JOB_MARKS_KEPT = 16;

/**
 * A resource as bulk work sees it: `job_marks` holds the ids of the last jobs that changed it, written
 * in the same update as the change, so a job taken over after a crash sees that it already applied
 * its change to this resource and does not apply it twice. Not part of the public object.
 */
export interface MarkedResource extends ResourceDocument {
  job_marks?: string[];
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * The id of an import item's resource, derived from the job id and the item's index: inserting it
 * twice (a chunk redone after a takeover) is a duplicate key, not a second resource. The time part
 * is the chunk's time (kept in the job's checkpoint, so a redo derives the same id) so that imported
 * resources sort among others by when they were made; then 9 characters of the job id's hash and the
 * index in 5 base62 characters (62^5 > 10,000 items).
 */
export function importedResourceId(job: string, index: number, chunkMs: number): string {
  const time = encodeTime(chunkMs);
  const jobPart = jobIdPart(job);
  let indexPart = "";
  for (let i = 0, rest = index; i < 5; i++, rest = Math.floor(rest / 62)) indexPart = BASE62[rest % 62] + indexPart;
  return `res_${time}${jobPart}${indexPart}`;
}

/** The last job's 9 characters: an import asks for one job's thousands of times in a row (a hash each, before). */
let lastJobPart: { job: string; part: string } | null = null;

function jobIdPart(job: string): string {
  if (lastJobPart?.job === job) return lastJobPart.part;
  const hash = createHash("sha256").update(job).digest();
  let part = "";
  for (let i = 0; i < 9; i++) part += BASE62[hash[i]! % 62];
  lastJobPart = { job, part };
  return part;
}

/** A new resource of an import item, with its `resource.created` event in its outbox, as a create writes it. */
export function importedResource(
  tenant: Tenant,
  id: string,
  fields: { name: string; status: ResourceStatusName; metadata: MetadataPair[] },
  chunkMs: number,
  request: RequestInfo,
): ResourceDocument {
  const state: ResourceState = { id, ...fields, created: Math.floor(chunkMs / 1000) };
  const created: PendingEvent = newEvent("resource.created", tenant, state, request, null);
  return {
    _id: id,
    account: tenant.account,
    livemode: tenant.livemode,
    ...state,
    ...nameFields(fields.name),
    version: 0,
    pending_events: [created],
    ...ownSlot(id),
  };
}

/** What one item of a bulk job comes to, given the resource as read now. */
export type ItemDecision =
  /**
   * The item's versioned, marked write: `op` with its event in the resource's outbox; `direct` the same change
   * without it, for a write whose `event` (stamped with the version it makes) is inserted in the same transaction.
   */
  | { kind: "write"; op: AnyBulkWriteOperation<MarkedResource>; direct: AnyBulkWriteOperation<MarkedResource>; event: PendingEvent }
  /** Applied already (by this job before a takeover) or nothing to change. */
  | { kind: "done" }
  /** Gone before the job reached it (deleted by someone else). */
  | { kind: "skipped" }
  | { kind: "failed"; error: { code: string; param: string | null; message: string } };

/** The change of a bulk update, same rules as a resource Update (metadata merged; `""` clears). */
export interface BulkChange {
  status?: ResourceStatusName;
  metadata?: MetadataPair[] | "";
}

type Current = Loaded<MarkedResource> | null;

function marked(doc: Loaded<MarkedResource>, job: string): boolean {
  return doc.job_marks?.includes(job) ?? false;
}

/**
 * Filter and mark shared by every item write: `{_id, version}` (the version read: every change, the
 * tombstone included, moves it, so the document is still the live, unmarked one that was decided on).
 * The `_id` index finds the one document; the version is checked on it.
 */
function guardedWrite(doc: Loaded<MarkedResource>, job: string, set: Partial<MarkedResource>, event: PendingEvent): Extract<ItemDecision, { kind: "write" }> {
  const filter = { _id: doc._id, version: doc.version } as Filter<MarkedResource>;
  const stamped = { ...event, sequence: doc.version + 1 };
  const mark = { job_marks: { $each: [job], $slice: -JOB_MARKS_KEPT } };
  return {
    kind: "write",
    op: { updateOne: { filter, update: { $set: set, $inc: { version: 1 }, $push: { pending_events: { $each: [stamped] }, ...mark } } as never } },
    direct: { updateOne: { filter, update: { $set: set, $inc: { version: 1 }, $push: mark } as never } },
    event: stamped,
  };
}

/** One item of a bulk update: its versioned, marked write with its `resource.updated` event (changed fields only), or why none. */
export function updateDecision(doc: Current, change: BulkChange, job: string, tenant: Tenant, request: RequestInfo): ItemDecision {
  // A resource deleted after this job updated it was still updated by the job.
  if (!doc) return { kind: "skipped" };
  if (marked(doc, job)) return { kind: "done" };
  if (doc.deleted) return { kind: "skipped" };
  let metadata = doc.metadata;
  try {
    if (change.metadata === "") metadata = [];
    else if (change.metadata)
      metadata = mergeMetadata(
        doc.metadata,
        change.metadata.map((p) => ({ key: p.k, value: p.v })),
      );
  } catch (error) {
    if (error instanceof RpcError) return { kind: "failed", error: { code: error.code, param: error.param ?? null, message: error.message } };
    throw error;
  }
  const before = stateOf(doc);
  const after: ResourceState = { ...before, ...(change.status ? { status: change.status } : {}), metadata };
  const previous = changedFields(before, after);
  if (!previous) return { kind: "done" };
  const event: PendingEvent = newEvent("resource.updated", tenant, after, request, previous);
  return guardedWrite(doc, job, { status: after.status, metadata: after.metadata }, event);
}

/** One item of a bulk delete: its tombstone with the `resource.deleted` event, or why none (deleted by this job already: done, once). */
export function deleteDecision(doc: Current, job: string, tenant: Tenant, request: RequestInfo): ItemDecision {
  if (!doc) return { kind: "skipped" };
  if (marked(doc, job)) return { kind: "done" };
  if (doc.deleted) return { kind: "skipped" };
  const event: PendingEvent = newEvent("resource.deleted", tenant, stateOf(doc), request);
  return guardedWrite(doc, job, tombstoneFields(doc._id), event);
}

/** Did this job's write land on the resource (read again after a batch)? */
export function appliedBy(doc: Current, job: string): boolean {
  return doc !== null && marked(doc, job);
}

/**
 * Live resources of the tenant matching `filter`, with ids after `after` and not after `bound` (the job's
 * start: resources made later are not its items): the one query of the filter (filter-query.ts), whose
 * index yields exactly the matches in id order (the runner's pass leaves the pick to the planner, so a
 * worker never depends on an index by name).
 */
export function matchingFilter(tenant: Tenant, filter: ResourceFilter, after: string | null, bound: string): Filter<MarkedResource> {
  return findFilter(resourceQuery(tenant, filter, { ...(after !== null ? { gt: after } : {}), lte: bound })) as Filter<MarkedResource>;
}

/** The highest id a resource made at `ms` can have: the bound of a bulk job started then. */
export function idBoundAt(ms: number): string {
  return `res_${encodeTime(ms)}${"z".repeat(14)}`;
}
