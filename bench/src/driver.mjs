// Baseline D of `npm run bench` (issue 22): the mongodb driver alone, in the bench's own process, in a closed loop at
// the same concurrency as every other run, on the same database server with the stack's durability options
// (majority, journaled, reads from the primary): the database's own ceiling on this machine.
//   d_find:   findOne by `_id` of the resource the GET rows read (core's collection, the outbox left out)
//   d_insert: insertOne of a resource-shaped document under a unique idempotency key (D's own collection)
//   d_page:   the list page's query (tenant, live, newest first, limit 21) in the account the list rows read
import { randomBytes } from "node:crypto";

export const D_RESOURCES = "bench_d_resources";

export async function driverRows({ run, mongoUri, databaseName, resourceId, listTenant, pids }) {
  const { MongoClient } = await import("mongodb");
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true }, retryWrites: true, readPreference: "primary" }).connect();
  try {
    const db = client.db(databaseName);
    const resources = db.collection("resources");
    const own = db.collection(D_RESOURCES);
    await own.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
    await own.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
    const projection = { projection: { pending_events: 0 } };
    await run.loop("d_find", () => resources.findOne({ _id: resourceId }, projection), pids);
    let n = 0;
    await run.loop(
      "d_insert",
      () => {
        const id = `res_${Date.now().toString(36)}${randomBytes(9).toString("base64url")}`;
        return own.insertOne({
          _id: id,
          account: listTenant.account,
          livemode: false,
          name: "bench",
          status: "active",
          metadata: [{ k: "plan", v: "pro" }],
          created: Math.floor(Date.now() / 1000),
          idempotency: `${listTenant.account}/test/d-${process.pid}-${n++}`,
        });
      },
      pids,
    );
    const filter = { account: listTenant.account, livemode: false, deleted: { $exists: false } };
    await run.loop("d_page", () => resources.find(filter, projection).sort({ _id: -1 }).limit(21).toArray(), pids);
  } finally {
    await client.close();
  }
}
