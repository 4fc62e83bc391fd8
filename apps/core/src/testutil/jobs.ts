import { RESOURCES_VOCABULARY } from "@rms/proto";
import type { Db } from "mongodb";
import { pino } from "pino";
import type { Tenant } from "../caller.js";
import { JobStore } from "../jobs/store.js";
import type { RequestedParams } from "../jobs/model.js";
import { JobFiles } from "../files/for-jobs.js";
import { DEFAULT_JOBS_QUEUED_PER_ACCOUNT } from "../settings.js";
import type { RunnerJob } from "../jobs/runner/seam.js";
import { importedResource, importedResourceId } from "../resources/batch.js";
import type { ResourceDocument, ResourceStatusName } from "../resources/model.js";
import { RESOURCES_COLLECTION } from "../resources/store.js";
import { EVENTS_COLLECTION, OutboxRelay } from "../storage/relay.js";

const NO_REQUEST = { requestId: null, idempotencyKey: null };

/** File storage as jobs use it (the files domain's surface for jobs), on the test's database. */
export function jobFiles(db: Db): JobFiles {
  return new JobFiles(db);
}

/** A job store as the jobs domain opens it, with file storage (imports store their items as a file). */
export function jobStore(db: Db): JobStore {
  return new JobStore(db, () => {}, DEFAULT_JOBS_QUEUED_PER_ACCOUNT, jobFiles(db));
}

/** Queues a job as the jobs API does (its store's create; an inline import's items become a file). */
export async function queueJob(db: Db, tenant: Tenant, typed: RequestedParams): Promise<string> {
  const created = await jobStore(db).create(tenant, typed, NO_REQUEST);
  if (!("doc" in created)) throw new Error("job not created");
  return created.doc._id;
}

export function jobOf(db: Db, id: string): Promise<RunnerJob | null> {
  return db.collection<RunnerJob>("jobs").findOne({ _id: id });
}

/** `count` resources of the tenant inserted at once, as creates would store them (with their created events). */
export async function seedResources(
  db: Db,
  tenant: Tenant,
  count: number,
  fields: (i: number) => { name?: string; status?: ResourceStatusName; metadata?: { k: string; v: string }[] } = () => ({}),
): Promise<string[]> {
  const seed = `seed${Math.random()}`;
  const now = Date.now() - 1_000;
  const docs: ResourceDocument[] = Array.from({ length: count }, (_, i) =>
    importedResource(tenant, importedResourceId(seed, i, now), { name: `r${i}`, status: "active", metadata: [], ...fields(i) }, now, NO_REQUEST),
  );
  for (let i = 0; i < docs.length; i += 1000) await db.collection<ResourceDocument>(RESOURCES_COLLECTION).insertMany(docs.slice(i, i + 1000));
  return docs.map((d) => d._id);
}

/** Moves every pending event of resources and jobs into `events` (sweeps until nothing is left). */
export async function relayAll(db: Db): Promise<void> {
  const relay = new OutboxRelay(db, { sources: [RESOURCES_COLLECTION, "jobs"], logger: pino({ level: "silent" }) });
  while ((await relay.sweep()).events > 0);
}

/** Events of the tenant about resources, counted per object id and type. */
export async function eventCounts(db: Db, tenant: Tenant): Promise<Map<string, number>> {
  const events = await db
    .collection<{ _id: string; type: string; object: { id: string } }>(EVENTS_COLLECTION)
    .find({ account: tenant.account, livemode: tenant.livemode, type: { $in: [...RESOURCES_VOCABULARY.eventTypes] } })
    .toArray();
  const counts = new Map<string, number>();
  for (const e of events) counts.set(`${e.object.id} ${e.type}`, (counts.get(`${e.object.id} ${e.type}`) ?? 0) + 1);
  return counts;
}
