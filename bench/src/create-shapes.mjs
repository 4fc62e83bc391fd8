// Floor of the keyed create by its shape (issue 30): the database cost of the write shapes an exactly-once create can
// take, with the driver alone on one replica-set member, closed loops of 16, two rounds each: C's one insert (the
// record inside the resource), core's lock then a transaction (today), one transaction holding the lock, three plain
// majority writes, and a bare resource insert. Prints ops/s and mongod CPU per op. `npm run build`, then from bench/:
// `../node_modules/.bin/node src/create-shapes.mjs` (S = seconds per loop, default 8; ONLY = comma-separated shapes).
// Microbench: database cost of keyed-create shapes, on one mongod replica set member, closed loops of 16.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { MongoClient } from "mongodb";
import { startDatabase } from "@rms/test-db";

const SECONDS = Number(process.env.S ?? 8);
const CONC = 16;
const db0 = await startDatabase({});
const client = await new MongoClient(db0.uri, { writeConcern: { w: "majority", journal: true }, retryWrites: true, maxPoolSize: 32 }).connect();
const db = client.db("shapes");
const res = db.collection("resources");
const rec = db.collection("idempotency_keys");
const c = db.collection("c_created");
await c.createIndex({ idempotency: 1 }, { unique: true, sparse: true });
await c.createIndex({ account: 1, livemode: 1, _id: -1 });
await rec.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
for (const [k, o] of [
  [{ account: 1, livemode: 1, _id: -1 }, {}],
  [{ account: 1, livemode: 1, status: 1, _id: -1 }, {}],
  [{ account: 1, livemode: 1, name_lower: 1, _id: -1 }, {}],
  [{ expires_at: 1 }, { expireAfterSeconds: 0 }],
  [{ "metadata.k": 1, "metadata.v": 1, account: 1 }, {}],
  [{ "pending_events.0": 1 }, { partialFilterExpression: { "pending_events.0": { $exists: true } } }],
])
  await res.createIndex(k, o);

const cpu = () => {
  const s = readFileSync(`/proc/${db0.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(s[11]) + Number(s[12])) * 10;
};
let n = 0;
const id = () => `res_${Date.now().toString(36)}${randomBytes(9).toString("base64url")}`;
const doc = (key) => ({
  _id: id(),
  account: "acct_1",
  livemode: false,
  name: "bench",
  name_lower: "bench",
  status: "active",
  metadata: [{ k: "plan", v: "pro" }],
  created: Math.floor(Date.now() / 1000),
  version: 0,
  idempotency: key,
  pending_events: [{ id: `evt_${randomBytes(9).toString("base64url")}`, type: "resource.created", data: { name: "bench" } }],
});
const record = (key) => ({
  _id: key,
  account: "acct_1",
  livemode: false,
  fingerprint: "f".repeat(43),
  created: new Date(),
  expires_at: new Date(Date.now() + 864e5),
  owner: randomBytes(12).toString("base64url"),
  locked_until: new Date(Date.now() + 35e3),
  completed: false,
  request_id: "req_x",
});
const answer = { reply: Buffer.alloc(180, 1), headers: "[]" };

const shapes = {
  c_one_insert: async () => {
    const k = `k${n++}`;
    const d = doc(k);
    delete d.pending_events;
    await c.insertOne({ ...d, request_hash: "h", answer });
  },
  lock_then_txn: async () => {
    const k = `k${n++}`;
    const r = record(k);
    await rec.insertOne(r);
    const s = client.startSession();
    try {
      await s.withTransaction(async () => {
        await res.insertOne(doc(k), { session: s });
        await rec.updateOne({ _id: k, owner: r.owner, completed: false }, { $set: { completed: true, answer } }, { session: s });
      });
    } finally {
      await s.endSession();
    }
  },
  one_txn: async () => {
    const k = `k${n++}`;
    const r = record(k);
    const s = client.startSession();
    try {
      await s.withTransaction(async () => {
        await rec.insertOne(r, { session: s });
        await res.insertOne(doc(k), { session: s });
        await rec.updateOne({ _id: k, owner: r.owner }, { $set: { completed: true, answer } }, { session: s });
      });
    } finally {
      await s.endSession();
    }
  },
  three_writes: async () => {
    const k = `k${n++}`;
    const r = record(k);
    await rec.insertOne(r);
    await res.insertOne(doc(k));
    await rec.updateOne({ _id: k, owner: r.owner, completed: false }, { $set: { completed: true, answer } });
  },
  bare_resource_insert: async () => {
    await res.insertOne(doc(`k${n++}`));
  },
};
const only = process.env.ONLY?.split(",");
for (const round of [1, 2])
  for (const [name, op] of Object.entries(shapes)) {
    if (only && !only.includes(name)) continue;
    const end = Date.now() + SECONDS * 1000;
    let done = 0;
    const c0 = cpu();
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: CONC }, async () => {
        while (Date.now() < end) {
          await op();
          done++;
        }
      }),
    );
    const secs = (Date.now() - t0) / 1000;
    const dcpu = cpu() - c0;
    console.log(`${round} ${name.padEnd(22)} ${(done / secs).toFixed(0).padStart(6)} ops/s  mongod CPU ${(dcpu / done).toFixed(2)} ms/op`);
  }
await client.close();
await db0.stop?.();
process.exit(0);
