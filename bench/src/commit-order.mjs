#!/usr/bin/env node
// `node bench/src/commit-order.mjs`: what a document's stamp says of the order writes commit in, on a genuine mongod
// (docs/streams.md, "What the database offers, measured"). 16 writers insert at once with each stamp: the empty BSON
// timestamp the server fills, `$$CLUSTER_TIME` in an upsert's pipeline, and batches of five; each document's stamp is
// compared with its insert's oplog entry, the stamps' order with the oplog's (commit) order, and a change stream's
// order and `clusterTime` with the oplog's.
import { startDatabase } from "@rms/test-db";
import { MongoClient, Timestamp } from "mongodb";

const WRITERS = 16;
const PER_WRITER = 200;
const database = await startDatabase({ logger: (line) => process.stderr.write(`${line}\n`) });
const client = await new MongoClient(database.uri, { maxPoolSize: 64, writeConcern: { w: "majority", j: true } }).connect();
try {
  for (const mode of ["empty timestamp", "$$CLUSTER_TIME", "empty timestamp, batches of 5"]) {
    const db = client.db(`commit_order_${mode.replace(/\W+/g, "_")}`);
    await db.dropDatabase();
    const docs = db.collection("docs");
    await docs.insertOne({ _id: "warm", pos: new Timestamp(0n) });
    const stream = docs.watch([{ $match: { operationType: { $in: ["insert", "update"] } } }]);
    const seen = [];
    stream.on("change", (change) => seen.push({ id: change.documentKey._id, clusterTime: change.clusterTime }));
    await new Promise((resolve) => stream.once("resumeTokenChanged", resolve));
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        for (let i = 0; i < PER_WRITER; i++) {
          const id = `w${w}-${i}`;
          if (mode === "$$CLUSTER_TIME") await docs.updateOne({ _id: id }, [{ $set: { pos: "$$CLUSTER_TIME" } }], { upsert: true });
          else if (mode.includes("batches")) await docs.insertMany(Array.from({ length: 5 }, (_, k) => ({ _id: `${id}-${k}`, pos: new Timestamp(0n) })));
          else await docs.insertOne({ _id: id, pos: new Timestamp(0n) });
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await stream.close();
    const stored = await docs.find({ _id: { $ne: "warm" } }).toArray();
    const oplog = new Map();
    for (const entry of await client
      .db("local")
      .collection("oplog.rs")
      .find({ ns: `${db.databaseName}.docs` })
      .toArray()) {
      oplog.set(entry.o?._id ?? entry.o2?._id, entry.ts);
    }
    const before = stored.filter((d) => d.pos.compare(oplog.get(d._id)) < 0).length;
    let inversions = 0;
    let highest = null;
    for (const doc of [...stored].sort((a, b) => oplog.get(a._id).compare(oplog.get(b._id)))) {
      if (highest && doc.pos.compare(highest) < 0) inversions++;
      if (!highest || doc.pos.compare(highest) > 0) highest = doc.pos;
    }
    const streamOutOfOrder = seen.filter((s, i) => i > 0 && s.clusterTime.compare(seen[i - 1].clusterTime) < 0).length;
    const streamNotOplog = seen.filter((s) => oplog.has(s.id) && s.clusterTime.compare(oplog.get(s.id)) !== 0).length;
    process.stdout.write(
      `${JSON.stringify({ mode, documents: stored.length, stamp_before_its_oplog_entry: before, stamp_order_inversions: inversions, change_stream_out_of_order: streamOutOfOrder, change_stream_time_not_oplog_time: streamNotOplog })}\n`,
    );
    await db.dropDatabase();
  }
} finally {
  await client.close();
  await database.stop();
}
