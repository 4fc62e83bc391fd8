import type { Db } from "mongodb";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../testutil/database.js";
import { MIGRATION_LEASE_COLLECTION } from "./lease.js";
import { walkDocuments } from "./parts.js";
import { migrationRecords } from "./records.js";
import { migrate, MigrationError, type MigrateOptions } from "./run.js";
import { migrationStatus, planMigrations } from "./status.js";
import type { MigrationStep, StepPart, StepPosition } from "./step.js";

const t = useTestDatabase("migrations_run");
const silent = pino({ level: "silent" });
const options = (owner: string, extra: Partial<MigrateOptions> = {}): MigrateOptions => ({ owner, release: "1.4.1", logger: silent, ...extra });

/** A collection of `count` documents in the old shape (`v: 1`), which the step below moves to `v: 2`. */
async function oldShaped(db: Db, collection: string, count: number): Promise<void> {
  await db.collection(collection).insertMany(Array.from({ length: count }, (_, i) => ({ _id: `doc_${String(i).padStart(5, "0")}` as never, v: 1 })));
}

/** A step over `collection` whose every batch is counted, with the position it began after. */
function countedStep(id: string, collection: string, kind: MigrationStep["kind"] = "expand") {
  const calls: unknown[] = [];
  const walk = walkDocuments({ collection, where: { v: 1 }, what: "documents of v1", update: { $set: { v: 2 } } });
  const part: StepPart = {
    pending: (db) => walk.pending(db),
    async batch(db, after, size) {
      calls.push(after);
      return walk.batch(db, after, size);
    },
  };
  const step: MigrationStep = { id, release: "1.4.1", kind, summary: `moves ${collection} to v2`, parts: [part] };
  return { step, calls };
}

describe("a run", () => {
  it("runs the steps in order in bounded batches, records each (state, times, the release that ran it), and does nothing the second time", async () => {
    await oldShaped(t.db, "ordered", 23);
    const first = countedStep("0001-first", "ordered");
    const second = countedStep("0002-second", "ordered_too");
    const result = await migrate(t.db, options("core a", { steps: [first.step, second.step], batchSize: 10 }));
    expect(result).toEqual({ ran: ["0001-first", "0002-second"], waited: false });
    // 10 + 10 + 3: the third batch is short, so the walk ends there.
    expect(first.calls).toEqual([null, "doc_00009", "doc_00019"]);
    expect(await t.db.collection("ordered").countDocuments({ v: 2 })).toBe(23);
    const record = (await migrationRecords(t.db).findOne({ _id: "0001-first" }))!;
    expect(record).toMatchObject({ state: "done", kind: "expand", release: "1.4.1", finished_by_release: "1.4.1", batches: 3, changed: 23 });
    expect(record.position).toEqual({ part: 1, after: null });
    expect(record.runs).toEqual([expect.objectContaining({ owner: "core a", release: "1.4.1", from: { part: 0, after: null } })]);
    expect(record.finished_at!.getTime()).toBeGreaterThanOrEqual(record.started_at.getTime());

    expect(await migrate(t.db, options("core b", { steps: [first.step, second.step], batchSize: 10 }))).toEqual({ ran: [], waited: false });
    expect(first.calls).toHaveLength(3);
  });

  it("resumes a step where a run stopped between batches, without doing the batches before again", async () => {
    await oldShaped(t.db, "resumed", 50);
    const { step, calls } = countedStep("0001-resumed", "resumed");
    // The first run stops after its third batch is recorded, as a process killed there would (its lease is let go here).
    const stopped = new Error("stopped after the third batch");
    const stopAtThird = (_: MigrationStep, position: StepPosition) => {
      if (position.after === "doc_00029") throw stopped;
    };
    await expect(migrate(t.db, options("core a", { steps: [step], batchSize: 10, afterBatch: stopAtThird }))).rejects.toBe(stopped);
    const halfway = (await migrationRecords(t.db).findOne({ _id: step.id }))!;
    expect(halfway).toMatchObject({ state: "running", batches: 3, changed: 30, position: { part: 0, after: "doc_00029" } });
    expect(await t.db.collection("resumed").countDocuments({ v: 2 })).toBe(30);

    expect((await migrate(t.db, options("core b", { steps: [step], batchSize: 10 }))).ran).toEqual([step.id]);
    // 3 batches by the first run, then from doc_00029 on: 30-39, 40-49, and the empty one that ends the walk.
    expect(calls).toEqual([null, "doc_00009", "doc_00019", "doc_00029", "doc_00039", "doc_00049"]);
    const done = (await migrationRecords(t.db).findOne({ _id: step.id }))!;
    expect(done).toMatchObject({ state: "done", batches: 6, changed: 50 });
    expect(done.runs.map((run) => [run.owner, run.from])).toEqual([
      ["core a", { part: 0, after: null }],
      ["core b", { part: 0, after: "doc_00029" }],
    ]);
    expect(await t.db.collection("resumed").countDocuments({ v: 2 })).toBe(50);
  });

  it("runs a step once when two processes start together: one runs it under the lease, the other waits for it", async () => {
    await oldShaped(t.db, "raced", 40);
    const { step, calls } = countedStep("0001-raced", "raced");
    const slowly = async () => void (await new Promise((resolve) => setTimeout(resolve, 20)));
    const run = (owner: string) => migrate(t.db, options(owner, { steps: [step], batchSize: 10, pollMs: 20, afterBatch: slowly }));
    const [a, b] = await Promise.all([run("core a"), run("core b")]);
    expect([a!.ran, b!.ran].flat()).toEqual([step.id]);
    expect([a!.waited, b!.waited].sort()).toEqual([false, true]);
    expect(calls).toEqual([null, "doc_00009", "doc_00019", "doc_00029", "doc_00039"]);
    expect((await migrationRecords(t.db).findOne({ _id: step.id }))!.runs).toHaveLength(1);
  });

  it("takes the lease over once a dead holder's runs out, and runs what it left", async () => {
    await oldShaped(t.db, "taken_over", 5);
    const { step } = countedStep("0001-taken-over", "taken_over");
    await t.db
      .collection<{ _id: string }>(MIGRATION_LEASE_COLLECTION)
      .updateOne({ _id: "migrations" }, { $set: { lease_owner: "core dead", lease_until: Date.now() + 500 }, $inc: { epoch: 1 } }, { upsert: true });
    const began = Date.now();
    const result = await migrate(t.db, options("core b", { steps: [step], pollMs: 20, leaseMs: 1_000 }));
    expect(result).toEqual({ ran: [step.id], waited: true });
    console.log(`took the lease over ${Date.now() - began} ms after the start (the dead holder's ran out after 500 ms)`);
    expect(await t.db.collection("taken_over").countDocuments({ v: 2 })).toBe(5);
  });

  it("records a step's failure and stops: the step stays running, with its error, and the process does not serve", async () => {
    const failing: MigrationStep = {
      id: "0001-failing",
      release: "1.4.1",
      kind: "expand",
      summary: "fails",
      parts: [{ pending: async () => "something", batch: () => Promise.reject(new Error("disk full")) }],
    };
    const error = await migrate(t.db, options("core a", { steps: [failing] })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect(error).toMatchObject({ code: "step_failed", message: "migration 0001-failing failed: disk full" });
    expect(await migrationRecords(t.db).findOne({ _id: failing.id })).toMatchObject({ state: "running", error: "disk full" });
    const status = await migrationStatus(t.db, [failing]);
    expect(status.steps.filter((step) => step.id === failing.id)).toEqual([expect.objectContaining({ state: "running", error: "disk full", known: true })]);
    expect(status.lease).toBeNull();
  });
});

describe("what releases may run on the data", () => {
  const db = () => t.client.db(`${t.databaseName}_releases`);

  it("computes how far back a rollback may go from the contract steps that have run, and refuses to serve past a later release's contract", async () => {
    const expand = countedStep("0001-expand", "releases_a").step;
    const contract = { ...countedStep("0002-contract", "releases_b", "contract").step, release: "1.4.3" };
    await migrate(db(), options("core a", { steps: [expand] }));
    expect(await migrationStatus(db(), [expand, contract])).toMatchObject({ rollbackFloor: "1.4.0", contracts: [] });
    await migrate(db(), options("core a", { steps: [expand, contract], release: "1.4.3" }));
    const status = await migrationStatus(db(), [expand]);
    expect(status).toMatchObject({ rollbackFloor: "1.4.3", contracts: ["0002-contract"] });
    // A step this release does not know is shown from its record.
    expect(status.steps.map((s) => [s.id, s.state, s.known])).toEqual([
      ["0001-expand", "done", true],
      ["0002-contract", "done", false],
    ]);
    // A 1.4.1 process on that data: its own steps are done, the later release's contract has removed what it reads.
    const refused = await migrate(db(), options("core old", { steps: [expand] })).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "newer_contract" });
    expect((refused as Error).message).toContain("0002-contract (1.4.3)");
    await db().dropDatabase();
  });
});

describe("a dry run", () => {
  it("says what each step not done would change, and changes nothing", async () => {
    const db = t.client.db(`${t.databaseName}_dry`);
    await oldShaped(db, "planned", 12);
    const { step, calls } = countedStep("0001-planned", "planned");
    const empty = countedStep("0002-empty", "nothing_here").step;
    expect(await planMigrations(db, [step, empty])).toEqual([
      { id: step.id, kind: "expand", summary: step.summary, state: "pending", changes: ["planned: 12 documents of v1"] },
      { id: empty.id, kind: "expand", summary: empty.summary, state: "pending", changes: [] },
    ]);
    expect(calls).toEqual([]);
    expect(await db.collection("planned").countDocuments({ v: 2 })).toBe(0);
    expect(await migrationRecords(db).countDocuments()).toBe(0);
    await migrate(db, options("core a", { steps: [step, empty] }));
    expect(await planMigrations(db, [step, empty])).toEqual([]);
    await db.dropDatabase();
  });
});
