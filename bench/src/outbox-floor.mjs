// The outbox floor of the jobs rows: the database writes the design's data rules ask for N changes, made by hand
// in the fewest round trips, without the job machinery (no chunks, checkpoints, queue, fan-out or API). A job
// against this floor shows what its own machinery costs; the floor against the raw insertMany / updateMany shows
// what the outbox rule itself costs the database (ARCHITECTURE data rule 2: each change carries its event in
// the same document write, the relay copies it into `events` under their indexes and pulls it from the
// document). Written into the bench's own collections, under core's indexes.

/** The events collection's indexes (core's), for the floor's own copy of it. */
async function eventIndexes(db) {
  return (await db.collection("events").indexes()).filter((index) => index.name !== "_id_");
}

/**
 * The relay's work by hand over `ids` of `resources`: one read of their outboxes, one insert of every event
 * (with its expiry) into `events`, one unordered bulk write pulling exactly those events. Returns the ms taken.
 */
async function relayByHand(resources, events, ids) {
  const relay = await import("@rms/core/bench");
  const started = performance.now();
  const docs = await resources.find({ _id: { $in: ids } }, { projection: { pending_events: 1 } }).toArray();
  const pending = docs.flatMap((doc) => doc.pending_events ?? []);
  if (pending.length > 0) {
    await events.insertMany(
      pending.map((event) => ({ ...event, expires_at: relay.eventExpiresAt(event) })),
      { ordered: false },
    );
    await resources.bulkWrite(
      docs.map((doc) => ({ updateOne: { filter: { _id: doc._id }, update: relay.pullRelayed((doc.pending_events ?? []).map((e) => e._id)) } })),
      { ordered: false },
    );
  }
  return performance.now() - started;
}

/**
 * The floor's collections: `raw` (already under core's resources indexes) and an events collection of its own
 * under core's events indexes. Answers the two floors: `relayed(ids)`, the relay's work over resources written
 * with their events; `update(tenant, change)`, a bulk update of the tenant's resources (one read, core's own
 * per-item decision, one unordered bulk write) followed by its relay.
 */
/** Documents per transaction of the floors that write events in the same batch as their changes (an import's chunk). */
const TOGETHER_CHUNK = 1_000;

/** `items` in slices of `size`. */
function slices(items, size) {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}

/**
 * Runs `write(session)` in one transaction, majority-committed (the commit is the batch's one durable write). Answers
 * its ms.
 */
async function inTransaction(client, write) {
  const session = client.startSession();
  try {
    const started = performance.now();
    await session.withTransaction(() => write(session), { writeConcern: { w: "majority", j: true } });
    return performance.now() - started;
  } finally {
    await session.endSession();
  }
}

export async function outboxFloor({ client, db, raw, eventsName }) {
  const events = db.collection(eventsName);
  for (const { key, v, ns, ...options } of await eventIndexes(db)) await events.createIndex(key, options);
  const batch = await import("@rms/core/bench");
  const noRequest = { requestId: null, idempotencyKey: null };
  const expiring = (event) => ({ ...event, expires_at: batch.eventExpiresAt(event) });
  return {
    relayed: (ids) => relayByHand(raw, events, ids),
    /**
     * The same inserts with their events written in the same batch instead of an outbox (issue 48): per chunk of
     * TOGETHER_CHUNK, one transaction inserting the resources (no `pending_events`) and their events into `events`.
     * No relay follows: nothing is left to copy or pull. Answers the ms.
     */
    async together(docs) {
      let ms = 0;
      for (const chunk of slices(docs, TOGETHER_CHUNK)) {
        ms += await inTransaction(client, async (session) => {
          await raw.insertMany(
            chunk.map(({ pending_events, ...doc }) => doc),
            { session },
          );
          await events.insertMany(chunk.flatMap((doc) => doc.pending_events).map(expiring), { session });
        });
      }
      return ms;
    },
    /** The bulk update's floor with its events in the same batch: one read, core's decisions, then per chunk one transaction of the updates (no outbox push) and their events. */
    async updateTogether(tenant, change) {
      const started = performance.now();
      const docs = await raw.find({ account: tenant.account, livemode: tenant.livemode }, { projection: { pending_events: 0 } }).toArray();
      const writes = [];
      for (const doc of docs) {
        const decision = batch.updateDecision(doc, change, "job_floor_together", tenant, noRequest);
        if (decision.kind === "write") writes.push({ op: decision.direct, events: [decision.event] });
      }
      for (const chunk of slices(writes, TOGETHER_CHUNK)) {
        await inTransaction(client, async (session) => {
          await raw.bulkWrite(
            chunk.map((w) => w.op),
            { session },
          );
          await events.insertMany(chunk.flatMap((w) => w.events).map(expiring), { session });
        });
      }
      return { ms: performance.now() - started, changed: writes.length };
    },
    async update(tenant, change) {
      const started = performance.now();
      const docs = await raw.find({ account: tenant.account, livemode: tenant.livemode }, { projection: { pending_events: 0 } }).toArray();
      const ops = [];
      for (const doc of docs) {
        const decision = batch.updateDecision(doc, change, "job_floor", tenant, noRequest);
        if (decision.kind === "write") ops.push(decision.op);
      }
      await raw.bulkWrite(ops, { ordered: false });
      const writeMs = performance.now() - started;
      const relayMs = await relayByHand(
        raw,
        events,
        docs.map((doc) => doc._id),
      );
      return { ms: writeMs + relayMs, writeMs, relayMs, changed: ops.length };
    },
  };
}
