// Baseline D of `npm run bench` (issue 22): the mongodb driver alone, in the bench's own process, in a closed loop at
// the same concurrency as every other run, on the same database server with the stack's durability options
// (majority, journaled, reads from the primary): the database's own ceiling on this machine.
//   d_find:   findOne by `_id` of the resource the GET rows read (core's collection, the outbox left out)
//   d_insert: insertOne of a resource-shaped document under a unique idempotency key (D's own collection)
//   d_page:   the list page's query (tenant, live, newest first, limit 21) in the account the list rows read
// The read-concern pairs (docs/database.md, "Read concern"): d_find and d_page as above with read concern `local`
// (the server's default), against d_find_majority and d_page_majority, the same queries with `majority`, as core
// sends a retrieve's and a list page's read. Each pair runs in the order A B B A and each side is the mean of its two
// rounds (load.mjs, meanOfRounds), so a drift of the shared machine weighs on both alike.
import { randomBytes } from "node:crypto";
import { meanOfRounds } from "./load.mjs";

export const D_RESOURCES = "bench_d_resources";

export async function driverRows({ run, results, mongoUri, databaseName, resourceId, listTenant, pids }) {
  const { MongoClient } = await import("mongodb");
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true }, retryWrites: true, readPreference: "primary" }).connect();
  try {
    const db = client.db(databaseName);
    const resources = db.collection("resources");
    const majority = db.collection("resources", { readConcern: { level: "majority" } });
    const own = db.collection(D_RESOURCES);
    await own.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
    await own.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
    const projection = { projection: { pending_events: 0 } };
    const find = (collection) => () => collection.findOne({ _id: resourceId }, projection);
    await loopPair(run, results, ["d_find", find(resources)], ["d_find_majority", find(majority)], pids);
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
    const page = (collection) => () => collection.find(filter, projection).sort({ _id: -1 }).limit(21).toArray();
    await loopPair(run, results, ["d_page", page(resources)], ["d_page_majority", page(majority)], pids);
  } finally {
    await client.close();
  }
}

/** Two closed loops compared with each other, in the order A B B A; each side's figures are its two rounds' mean. */
async function loopPair(run, results, [aName, aCall], [bName, bCall], pids) {
  const rounds = new Map([
    [aName, []],
    [bName, []],
  ]);
  for (const [name, call] of [
    [aName, aCall],
    [bName, bCall],
    [bName, bCall],
    [aName, aCall],
  ]) {
    await run.loop(name, call, pids);
    rounds.get(name).push(results[name]);
  }
  for (const [name, both] of rounds) {
    // A closed loop counts no HTTP statuses: the mean has none either.
    const { non2xx: _, ...mean } = meanOfRounds(both);
    results[name] = mean;
  }
}
