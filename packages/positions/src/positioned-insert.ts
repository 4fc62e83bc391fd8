import { MongoServerError, type ClientSession, type Collection, type Document, type OptionalUnlessRequiredId } from "mongodb";

/** The field that holds a document's position in its tenant's stream. */
export const POSITION_FIELD = "pos";

/** A document of a positioned collection: its id and its tenant (one account in one mode). */
export interface Tenanted {
  _id: string;
  account: string;
  livemode: boolean;
}

/** A tenant's counter: the last position given out. Written only inside the transactions of `insertPositioned`. */
export interface PositionCounter {
  _id: string;
  pos: number;
}

/** The counter's `_id` of a tenant: `<account>/<live|test>`. */
export function tenantKey(tenant: { account: string; livemode: boolean }): string {
  return `${tenant.account}/${tenant.livemode ? "live" : "test"}`;
}

/** Where positioned documents go and where their tenants' counters are kept. */
export interface PositionedCollections<D extends Tenanted> {
  readonly documents: Collection<D>;
  readonly counters: Collection<PositionCounter>;
}

/**
 * The index a stream's catch-up reads (`account, livemode, pos`): unique, so that no two documents of a tenant ever
 * share a position, and partial, so that documents written before positions existed are not in it.
 */
export async function ensurePositionIndex(collection: Collection<Document>, name: string, prefix: Readonly<Record<string, 1>> = {}): Promise<void> {
  await collection.createIndex(
    { account: 1, livemode: 1, ...prefix, [POSITION_FIELD]: 1 },
    { name, unique: Object.keys(prefix).length === 0, partialFilterExpression: { [POSITION_FIELD]: { $exists: true } } },
  );
}

/** Attempts of one insert whose documents another writer copied meanwhile (each attempt leaves out what exists). */
const DUPLICATE_ATTEMPTS = 5;

/**
 * Inserts `docs` (those not there already) with their positions: each tenant's documents get the next consecutive
 * positions of the tenant's counter, in the order given, and the counters' increments and the inserts commit in
 * one transaction. Two writers of one tenant both write its counter, so the second one's transaction conflicts
 * with the first and runs again after it: positions are given in commit order, with no gap, and a reader at
 * majority (or at any snapshot) that sees a position sees every lower one of the tenant (docs/streams.md). A
 * document already there (copied by another writer, or by an earlier attempt whose answer was lost) is left out
 * and keeps the position it has. Answers the documents inserted, with their positions.
 */
export async function insertPositioned<D extends Tenanted>(
  collections: PositionedCollections<D>,
  docs: readonly D[],
  options: { timeoutMS?: number } = {},
): Promise<(D & { pos: number })[]> {
  const { documents, counters } = collections;
  let pending = unique(docs);
  for (let attempt = 1; pending.length > 0; attempt++) {
    if (attempt > 1) pending = await absent(documents, pending, options);
    if (pending.length === 0) return [];
    const session = documents.db.client.startSession();
    try {
      let written: (D & { pos: number })[] = [];
      await session.withTransaction(async () => {
        written = await positioned(counters, pending, session, options);
        await documents.insertMany(written as unknown as OptionalUnlessRequiredId<D>[], { session, ordered: true, ...options });
      });
      return written;
    } catch (error) {
      // Another writer copied some of them since the read: leave those out and give the rest their positions.
      if (!isDuplicateId(error) || attempt >= DUPLICATE_ATTEMPTS) throw error;
    } finally {
      await session.endSession();
    }
  }
  return [];
}

/**
 * As `insertPositioned`, inside the caller's transaction (`session`): the counters' increments and the inserts commit
 * with whatever else that transaction writes (a bulk job's chunk writes its changes and their events together:
 * apps/core's `eventPublisher`). Every document must be new: a duplicate aborts the caller's transaction, which
 * leaves out what exists when it runs again. Answers the documents with their positions.
 */
export async function insertPositionedIn<D extends Tenanted>(
  collections: PositionedCollections<D>,
  docs: readonly D[],
  session: ClientSession,
): Promise<(D & { pos: number })[]> {
  const pending = unique(docs);
  if (pending.length === 0) return [];
  const written = await positioned(collections.counters, pending, session, {});
  await collections.documents.insertMany(written as unknown as OptionalUnlessRequiredId<D>[], { session, ordered: true });
  return written;
}

/** The documents with their positions: one `$inc` per tenant, in tenant order, each tenant's in the order given. */
async function positioned<D extends Tenanted>(
  counters: Collection<PositionCounter>,
  docs: readonly D[],
  session: ClientSession,
  options: { timeoutMS?: number },
): Promise<(D & { pos: number })[]> {
  const byTenant = new Map<string, D[]>();
  for (const doc of docs) {
    const key = tenantKey(doc);
    const list = byTenant.get(key);
    if (list) list.push(doc);
    else byTenant.set(key, [doc]);
  }
  const out: (D & { pos: number })[] = [];
  for (const key of [...byTenant.keys()].sort()) {
    const list = byTenant.get(key)!;
    const counter = await counters.findOneAndUpdate(
      { _id: key },
      { $inc: { pos: list.length } },
      { upsert: true, returnDocument: "after", session, ...options },
    );
    const last = counter?.pos ?? list.length;
    out.push(...list.map((doc, i) => ({ ...doc, pos: last - list.length + 1 + i })));
  }
  return out;
}

function unique<D extends Tenanted>(docs: readonly D[]): D[] {
  const seen = new Set<string>();
  return docs.filter((doc) => !seen.has(doc._id) && seen.add(doc._id));
}

/** Those of `docs` not in the collection (read at the primary's latest: a copy another writer committed is there). */
async function absent<D extends Tenanted>(documents: Collection<D>, docs: readonly D[], options: { timeoutMS?: number }): Promise<D[]> {
  const ids = docs.map((doc) => doc._id);
  const there = await documents
    .find({ _id: { $in: ids } } as never, { projection: { _id: 1 }, ...options })
    .map((doc) => (doc as { _id: string })._id)
    .toArray();
  const present = new Set(there);
  return docs.filter((doc) => !present.has(doc._id));
}

/** A duplicate key on `_id` (not on the position index, which a correct counter never repeats). */
function isDuplicateId(error: unknown): boolean {
  if (!(error instanceof MongoServerError) || error.code !== 11000) return false;
  const pattern = (error as { keyPattern?: Record<string, unknown> }).keyPattern;
  return pattern === undefined || Object.keys(pattern).join() === "_id";
}
