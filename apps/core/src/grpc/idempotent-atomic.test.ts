import { create, type DescMethodUnary } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { CreateResourceRequestSchema, IDEMPOTENCY_KEY_METADATA, ResourceService, type CallContext, type CreateResourceRequest } from "@rms/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errors } from "../errors.js";
import { IdempotencyRecords, type IdempotencyRecord } from "../storage/idempotency-records.js";
import { failPointClient } from "../testutil/fail-points.js";
import { newTenant, thing, thingsCollection } from "../testutil/storage.js";
import { rpc, type Call, type PresentedKeyCheck } from "./define-rpc.js";
import { conflictPause } from "./idempotent.js";

/**
 * A declaration's `atomic` under an Idempotency-Key (idempotent.ts `runAtomically`), on a genuine mongod: the write
 * and the record of its answer commit together or not at all.
 */
let t: Awaited<ReturnType<typeof thingsCollection>>;
let records: IdempotencyRecords;
beforeAll(async () => {
  t = await thingsCollection();
  records = new IdempotencyRecords(t.db);
  await records.ensureIndexes();
});
afterAll(() => t.close());

const method = ResourceService.method.createResource as DescMethodUnary;
const checkKey = (over = records): PresentedKeyCheck => Object.assign(async () => undefined, { keyed: { records: over, keyring: null } });
const tenant = newTenant();
const request = (name: string): CreateResourceRequest =>
  create(CreateResourceRequestSchema, { tenant: { accountId: tenant.account, livemode: tenant.livemode }, name });

function keyed(key: string, deadlineMs = 10_000): CallContext {
  const metadata = new Metadata();
  metadata.set(IDEMPOTENCY_KEY_METADATA, key);
  return { method: "/rms.v1.ResourceService/CreateResource", metadata, signal: new AbortController().signal, deadline: Date.now() + deadlineMs, caller: null };
}

/** A create of one thing, then `after` (which may throw), under `atomic`; counts its executions. `over`: another client's records and things. */
function declared(after: (id: string) => Promise<void> | void = () => undefined, over = { records, things: () => t.things }) {
  const runs = { count: 0 };
  const declaration = rpc.write({
    atomic: true,
    write: async (req: CreateResourceRequest, { budget }: Call) => {
      runs.count++;
      const doc = { ...thing(tenant), color: req.name };
      await over.things().insertOne(doc, budget.db());
      await after(doc._id);
      return { doc };
    },
    reply: ({ doc }) => ({ resource: { id: doc._id, name: doc.color } }),
  });
  return {
    runs,
    call: (key: string, name: string, deadlineMs?: number) => declaration.run(request(name), keyed(key, deadlineMs), checkKey(over.records), method),
  };
}

const recordOf = (key: string) => t.db.collection<IdempotencyRecord>("idempotency_keys").findOne({ _id: `${tenant.account}/test/${key}` });
const thingsNamed = (color: string) => t.things.countDocuments({ color });

describe("an atomic write under a key", () => {
  it("commits the write with its recorded answer; a repeat replays it without executing", async () => {
    const { runs, call } = declared();
    const first = await call("ok", "blue");
    expect(await thingsNamed("blue")).toBe(1);
    expect(await recordOf("ok")).toMatchObject({ completed: true });
    expect(await call("ok", "blue")).toMatchObject({ resource: { id: first.resource?.id } });
    expect(runs.count).toBe(1);
    expect(await thingsNamed("blue")).toBe(1);
  });

  it("a failure that is no answer (5xx) after the write: nothing commits and the key is free, so a retry executes once", async () => {
    let fail = true;
    const { runs, call } = declared(() => {
      if (fail) throw errors.unavailable();
    });
    await expect(call("fails", "red")).rejects.toMatchObject({ code: "service_unavailable" });
    expect(await thingsNamed("red")).toBe(0);
    expect(await recordOf("fails")).toBeNull();
    fail = false;
    await call("fails", "red");
    expect(runs.count).toBe(2);
    expect(await thingsNamed("red")).toBe(1);
  });

  it("a refusal from executing is recorded with what the write did, and replayed", async () => {
    const { runs, call } = declared((id) => {
      throw errors.notFound("thing", id);
    });
    await expect(call("refused", "green")).rejects.toMatchObject({ code: "resource_missing" });
    expect(await thingsNamed("green")).toBe(1);
    expect(await recordOf("refused")).toMatchObject({ completed: true, answer: { error: { code: "resource_missing" } } });
    await expect(call("refused", "green")).rejects.toMatchObject({ code: "resource_missing" });
    expect(runs.count).toBe(1);
  });

  it("the call's time running out after the write: nothing commits, the key is free (503, nothing done)", async () => {
    const { call } = declared(() => new Promise((resolve) => setTimeout(resolve, 400)));
    // 700 ms of deadline: core's budget (0.5 s shorter) ends while the write's step still runs.
    await expect(call("late", "grey", 700)).rejects.toMatchObject({ code: "service_unavailable" });
    expect(await thingsNamed("grey")).toBe(0);
    expect(await recordOf("late")).toBeNull();
  });

  it("a write conflict with a concurrent call's (two creates taking one free slot): the write runs again under the lock, and commits once", async () => {
    const runs = { count: 0 };
    const declaration = rpc.write({
      atomic: true,
      write: async (req: CreateResourceRequest, { budget }: Call) => {
        runs.count++;
        const slot = `slot-${req.name}-${runs.count}`;
        // The first attempt's slot is taken by another call meanwhile: its insert meets the other's document.
        if (runs.count === 1) await t.things.insertOne({ ...thing(tenant), _id: slot, color: "other" });
        const doc = { ...thing(tenant), _id: slot, color: req.name };
        await t.things.insertOne(doc, budget.db());
        return { doc };
      },
      reply: ({ doc }) => ({ resource: { id: doc._id, name: doc.color } }),
    });
    const answer = await declaration.run(request("pink"), keyed("conflict"), checkKey(), method);
    expect(runs.count).toBe(2);
    expect(answer.resource?.id).toBe("slot-pink-2");
    expect(await thingsNamed("pink")).toBe(1);
    expect(await recordOf("conflict")).toMatchObject({ completed: true });
  });

  it("many creates at once contending for one count (a limit's places): each runs again until it commits, none is refused", async () => {
    // Each attempt's write to the one count conflicts with every other transaction's still open: a round commits
    // one of them, so the last of 12 needs up to 12 attempts, more than a fixed handful of immediate retries gives.
    const count = `count-${tenant.account}`;
    await t.db.collection<{ _id: string; n: number }>("counts").insertOne({ _id: count, n: 0 });
    const runs = { count: 0 };
    const declaration = rpc.write({
      atomic: true,
      write: async (req: CreateResourceRequest, { budget }: Call) => {
        runs.count++;
        await t.db.collection<{ _id: string; n: number }>("counts").updateOne({ _id: count }, { $inc: { n: 1 } }, budget.db());
        const doc = { ...thing(tenant), color: req.name };
        await t.things.insertOne(doc, budget.db());
        return { doc };
      },
      reply: ({ doc }) => ({ resource: { id: doc._id, name: doc.color } }),
    });
    const creates = Array.from({ length: 12 }, (_, i) => declaration.run(request("crowd"), keyed(`crowd-${i}`), checkKey(), method));
    const outcomes = await Promise.allSettled(creates);
    const refused = outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason);
    console.log(`12 creates at once on one count: ${runs.count} attempts, ${refused.length} refused`);
    expect(refused).toEqual([]);
    expect(await thingsNamed("crowd")).toBe(12);
    expect(await t.db.collection<{ _id: string; n: number }>("counts").findOne({ _id: count })).toMatchObject({ n: 12 });
  });

  it("the pause between attempts is jittered, and grows to at most 64 ms", () => {
    expect(conflictPause(1, () => 0.999)).toBe(3);
    expect(conflictPause(3, () => 0.5)).toBe(8);
    expect(conflictPause(20, () => 0.999)).toBe(63);
    expect(conflictPause(5, () => 0)).toBe(0);
  });

  it("a repeat sent while the first executes finds its lock: in flight, and the write is made once", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { runs, call } = declared(() => held);
    const first = call("slow", "white");
    await expect.poll(() => recordOf("slow")).toMatchObject({ completed: false });
    await expect(call("slow", "white")).rejects.toMatchObject({ code: "idempotency_key_in_use" });
    // Another request under the key meanwhile is refused at once: the lock names its fingerprint.
    await expect(call("slow", "black")).rejects.toMatchObject({ code: "idempotency_key_reused" });
    release();
    await first;
    expect(runs.count).toBe(1);
    expect(await thingsNamed("white")).toBe(1);
    expect(await recordOf("slow")).toMatchObject({ completed: true });
  });

  it("a lock taken over while the write ran (its holder past its end): the write does not commit", async () => {
    const { call } = declared(async () => {
      // What a takeover of a stale lock leaves: the record under another holder.
      const records = t.db.collection<IdempotencyRecord>("idempotency_keys");
      await records.updateOne({ _id: `${tenant.account}/test/taken` }, { $set: { owner: "another holder" } });
    });
    await expect(call("taken", "black")).rejects.toMatchObject({ code: "service_unavailable" });
    expect(await thingsNamed("black")).toBe(0);
    expect(await recordOf("taken")).toMatchObject({ completed: false, owner: "another holder" });
  });

  // NoSuchTransaction with TransientTransactionError is what a new primary answers for a transaction its predecessor
  // had: nothing of it committed. Made here by a fail point on this test's own client (its appName), one commit only.
  it("a commit refused as transient (an election lost the transaction): nothing committed, the call runs again under its lock and commits once", async () => {
    const faults = await failPointClient("commit-refused");
    try {
      const db = faults.client.db(t.db.databaseName);
      const over = { records: new IdempotencyRecords(db), things: () => db.collection<ReturnType<typeof thing>>("things") };
      if (!(await faults.arm({ times: 1 }, { failCommands: ["commitTransaction"], errorCode: 251, errorLabels: ["TransientTransactionError"] }))) return;
      try {
        const { runs, call } = declared(() => undefined, over);
        const answer = await call("transient-commit", "teal");
        expect(runs.count).toBe(2);
        expect(await thingsNamed("teal")).toBe(1);
        expect(await recordOf("transient-commit")).toMatchObject({ completed: true });
        expect(await call("transient-commit", "teal")).toMatchObject({ resource: { id: answer.resource?.id } });
        expect(runs.count).toBe(2);
      } finally {
        await faults.off();
      }
    } finally {
      await faults.close();
    }
  });
});
