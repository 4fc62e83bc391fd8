// What `npm run chaos` counts and checks. What a client can see is read through the public API (resources,
// events and their pending_webhooks, jobs) and from the receiver's tallies; the database is read, never written,
// only for what no API shows (`StoredState`): how many changes each resource committed, whether an outbox still
// holds an event, and the deliveries queue.
import { MongoClient } from "mongodb";
import type { PublicApi } from "../stack/public-api.js";
import { sleep } from "./log.js";
import type { LoadOutcomes } from "./load.js";
import type { Received } from "./receiver.js";

export interface ResourceObject {
  id: string;
  name: string;
  status: string;
}

export interface EventObject {
  id: string;
  type: string;
  sequence: number;
  pending_webhooks: number;
  data: { object: { id: string; name?: string } };
}

/**
 * Read-only views of core's stored state, each for a fact no public API shows. The collections it reads are
 * named here: core exports no collection names, and nothing here writes.
 */
export class StoredState {
  private constructor(
    private readonly client: MongoClient,
    private readonly databaseName: string,
  ) {}

  static async open(uri: string, databaseName: string): Promise<StoredState> {
    return new StoredState(await new MongoClient(uri).connect(), databaseName);
  }

  private collection(name: "resources" | "jobs" | "webhook_deliveries") {
    return this.client.db(this.databaseName).collection(name);
  }

  /** Each resource's committed changes, as its stored version (a create is 0, every update adds 1): not public. */
  async versions(account: string): Promise<Map<string, number>> {
    const docs = await this.collection("resources")
      .find({ account }, { projection: { version: 1 } })
      .toArray();
    return new Map(docs.map((d) => [String(d._id), d.version as number]));
  }

  /** Documents (an account's resources, and the given jobs) whose outbox still holds an event not copied to the events list: not public. */
  async outboxes(account: string, jobIds: readonly string[] = []): Promise<number> {
    const pending = { "pending_events.0": { $exists: true } };
    return (
      (await this.collection("resources").countDocuments({ account, ...pending })) +
      (jobIds.length > 0 ? await this.collection("jobs").countDocuments({ _id: { $in: jobIds } as never, ...pending }) : 0)
    );
  }

  /** The deliveries queue by status (a delivery that succeeded leaves it; its attempt stays, public): the queue is not public. */
  async deliveriesByStatus(): Promise<Record<string, number>> {
    const groups = await this.collection("webhook_deliveries")
      .aggregate<{ _id: string; n: number }>([{ $group: { _id: "$status", n: { $sum: 1 } } }])
      .toArray();
    return Object.fromEntries(groups.map((g) => [g._id, g.n]));
  }

  /** An account's deliveries in the queue, all or of one status (pending: still to be attempted): the queue is not public. */
  async deliveriesOf(account: string, status?: "pending"): Promise<number> {
    return this.collection("webhook_deliveries").countDocuments({ account, ...(status ? { status } : {}) });
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** Events of the key's account that an endpoint has not answered 2xx yet (`delivery_success=false`): 0 or 1, enough to know. */
async function eventsAwaitingWebhooks(api: PublicApi): Promise<number> {
  return (await api.page("/v1/events", "delivery_success=false", 1)).data.length;
}

/**
 * Waits, at most `boundMs`, until no outbox of the account (and of `jobIds`) holds an event and, with `webhooks`,
 * no event of the account waits for a delivery; answers what is left then.
 */
export async function settle(
  api: PublicApi,
  state: StoredState,
  options: { account: string; jobIds?: readonly string[]; webhooks: boolean; boundMs: number },
): Promise<{ outboxes: number; awaitingWebhooks: number; seconds: number }> {
  const started = Date.now();
  const left = async () => ({
    outboxes: await state.outboxes(options.account, options.jobIds),
    awaitingWebhooks: options.webhooks ? await eventsAwaitingWebhooks(api) : 0,
  });
  let now = await left();
  while ((now.outboxes > 0 || now.awaitingWebhooks > 0) && Date.now() - started < options.boundMs) {
    await sleep(500);
    now = await left();
  }
  return { ...now, seconds: (Date.now() - started) / 1000 };
}

/** How many items appear more than once, under `keyOf`. */
function repeats<T>(items: readonly T[], keyOf: (item: T) => string): { seen: Map<string, number>; extra: number } {
  const seen = new Map<string, number>();
  for (const item of items) seen.set(keyOf(item), (seen.get(keyOf(item)) ?? 0) + 1);
  return { seen, extra: [...seen.values()].reduce((sum, n) => sum + n - 1, 0) };
}

export interface ResourcesPhaseCounts {
  found: number;
  /** Resources beyond the first with the same name. */
  duplicates: number;
  /** Acknowledged creates whose resource is not there. */
  lost: number;
  /** Committed changes: each resource's version + 1. */
  changes: number;
  events: number;
  missingEvents: number;
  duplicateEvents: number;
  documentsWithPendingEvents: number;
  deliveries: number;
  undelivered: number;
  duplicateDeliveries: number;
  eventsWithPendingWebhooks: number;
  deliveryDocumentsByStatus: Record<string, number>;
  ok: boolean;
}

/** The resources phase, counted once the stack has settled: resources, committed changes, their events and their deliveries. */
export async function countResourcesPhase(input: {
  api: PublicApi;
  state: StoredState;
  account: string;
  outcomes: LoadOutcomes;
  received: Received;
  /** What the settle left in the account's outboxes. */
  documentsWithPendingEvents: number;
}): Promise<ResourcesPhaseCounts> {
  const { api, state, outcomes, received } = input;
  // The jobs phase's resources and events are in an account of their own, counted by countJobsPhase.
  const resources = (await api.all<ResourceObject>("/v1/resources")).filter((r) => r.name.startsWith("chaos-"));
  const versions = await state.versions(input.account);
  const versionOf = (r: ResourceObject) => versions.get(r.id) ?? 0;
  const ours = new Set(resources.map((r) => r.id));
  const events = (await api.all<EventObject>("/v1/events")).filter((e) => ours.has(e.data.object.id));
  const deliveryDocumentsByStatus = await state.deliveriesByStatus();

  const byName = repeats(resources, (r) => r.name);
  const byChange = repeats(events, (e) => `${e.data.object.id}/${e.sequence}`);
  // Missing: a committed change (sequence 0..version of a resource) with no event for it.
  let missingEvents = 0;
  for (const r of resources) for (let s = 0; s <= versionOf(r); s++) if (!byChange.seen.has(`${r.id}/${s}`)) missingEvents++;
  // Deliveries: what the receiver answered 2xx to. Undelivered: an event never answered 2xx; duplicates: 2xx
  // answers beyond the first for an event (allowed: a worker killed after the POST and before recording it).
  const deliveries = [...received.answered2xx.values()].reduce((sum, times) => sum + times.length, 0);
  const counts = {
    found: resources.length,
    duplicates: byName.extra,
    lost: [...outcomes.acknowledged].filter((i) => !byName.seen.has(`chaos-${i}`)).length,
    changes: resources.reduce((sum, r) => sum + versionOf(r) + 1, 0),
    events: events.length,
    missingEvents,
    duplicateEvents: byChange.extra,
    documentsWithPendingEvents: input.documentsWithPendingEvents,
    deliveries,
    undelivered: events.filter((e) => !received.answered2xx.has(e.id)).length,
    duplicateDeliveries: deliveries - received.answered2xx.size,
    eventsWithPendingWebhooks: events.filter((e) => e.pending_webhooks > 0).length,
    deliveryDocumentsByStatus,
  };
  const ok =
    counts.duplicates === 0 &&
    counts.lost === 0 &&
    outcomes.gaveUp === 0 &&
    counts.missingEvents === 0 &&
    counts.duplicateEvents === 0 &&
    counts.documentsWithPendingEvents === 0 &&
    counts.undelivered === 0 &&
    counts.eventsWithPendingWebhooks === 0 &&
    received.unverified === 0;
  return { ...counts, ok };
}

export interface JobsPhaseCounts {
  found: number;
  duplicates: number;
  /** Resources the bulk update changed more than once (version > 1). */
  updatesAppliedTwice: number;
  /** Resources it did not change (version 0, or status not paused). */
  updatesMissing: number;
  events: number;
  missingEvents: number;
  duplicateEvents: number;
  documentsWithPendingEvents: number;
  ok: boolean;
}

/** The jobs phase (an import of `items` resources named `<tag>-<i>`, then a bulk update of them), counted once settled. */
export async function countJobsPhase(input: {
  api: PublicApi;
  state: StoredState;
  account: string;
  tag: string;
  items: number;
  jobs: readonly { id: string; status: string }[];
  /** What the settle left in the account's and the jobs' outboxes. */
  documentsWithPendingEvents: number;
}): Promise<JobsPhaseCounts> {
  const { api, tag } = input;
  const ours = (name: unknown) => typeof name === "string" && name.startsWith(`${tag}-`);
  const jobIds = new Set(input.jobs.map((j) => j.id));
  const found = (await api.all<ResourceObject>("/v1/resources")).filter((r) => ours(r.name));
  const versions = await input.state.versions(input.account);
  const versionOf = (r: ResourceObject) => versions.get(r.id) ?? 0;
  const events = (await api.all<EventObject>("/v1/events")).filter((e) => ours(e.data.object.name) || jobIds.has(e.data.object.id));
  const byChange = repeats(events, (e) => `${e.data.object.id}/${e.type}/${e.sequence}`);
  let missingEvents = 0;
  for (const r of found) {
    if (!byChange.seen.has(`${r.id}/resource.created/0`)) missingEvents++;
    for (let s = 1; s <= versionOf(r); s++) if (!byChange.seen.has(`${r.id}/resource.updated/${s}`)) missingEvents++;
  }
  for (const id of jobIds) if (![...byChange.seen.keys()].some((k) => k.startsWith(`${id}/job.`))) missingEvents++;
  const counts = {
    found: found.length,
    duplicates: repeats(found, (r) => r.name).extra,
    updatesAppliedTwice: found.filter((r) => versionOf(r) > 1).length,
    updatesMissing: found.filter((r) => versionOf(r) < 1 || r.status !== "paused").length,
    events: events.length,
    missingEvents,
    duplicateEvents: byChange.extra,
    documentsWithPendingEvents: input.documentsWithPendingEvents,
  };
  const ok =
    input.jobs.every((j) => j.status === "succeeded") &&
    counts.found === input.items &&
    counts.duplicates === 0 &&
    counts.updatesAppliedTwice === 0 &&
    counts.updatesMissing === 0 &&
    counts.missingEvents === 0 &&
    counts.duplicateEvents === 0 &&
    counts.documentsWithPendingEvents === 0;
  return { ...counts, ok };
}
