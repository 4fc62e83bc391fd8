import { RELEASE } from "@rms/config";
import { MIGRATION_STEPS, MIGRATIONS_COLLECTION } from "@rms/core";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Document } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { runCli } from "./cli.js";

// `rms migrate` on a database of its own, as an operator runs it before the cores of a new release start.
const databaseName = testDatabaseName("cli_migrate");
let mongo: MongoClient;
beforeAll(async () => {
  mongo = await new MongoClient(inject("mongoUri")).connect();
});
afterAll(async () => {
  await mongo.db(databaseName).dropDatabase();
  await mongo.close();
});

async function rms(...args: string[]) {
  let stdout = "";
  let stderr = "";
  const env = { MONGODB_URI: inject("mongoUri"), MONGODB_DATABASE: databaseName };
  const code = await runCli(args, { env, stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) });
  return { code, stdout, stderr, lines: stdout.trimEnd().split("\n") };
}

const ids = MIGRATION_STEPS.map((step) => step.id);

it("status, dry run, up and status again on a database 1.4.0 left: what each step would change, then done, and a rollback to 1.4.0 safe", async () => {
  const db = mongo.db(databaseName);
  // What a 1.4.0 database may hold: a resource without the name fields, an index an earlier build declared, a record
  // holding a gateway's HTTP answer.
  await db.collection<Document>("resources").insertOne({ _id: "res_0000000000000000000001" as never, name: "Old", status: "active", metadata: [] });
  await db.collection("resources").createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "live_order" });
  await db
    .collection<Document>("idempotency_keys")
    .insertOne({ _id: "acct_1/test/k" as never, completed: true, status: 201, created: new Date(), expires_at: new Date(Date.now() + 3_600_000) });

  const before = await rms("migrate", "status");
  console.log(before.stdout);
  expect(before.code).toBe(0);
  expect(before.lines[0]).toBe(`rms ${RELEASE}, database ${databaseName}: 0 of ${ids.length} steps done`);
  for (const [i, id] of ids.entries()) expect(before.lines[i + 1]).toMatch(new RegExp(`^${id} +expand +1\\.4\\.1 +pending +\\S`));
  expect(before.lines.slice(-2)).toEqual(["lease: free", "rollback: safe to any release from 1.4.0 (only expand steps have run)"]);

  const dry = await rms("migrate", "up", "--dry-run");
  console.log(dry.stdout);
  expect(dry.code).toBe(0);
  expect(dry.lines[0]).toBe(`rms ${RELEASE}, database ${databaseName}: ${ids.length} step(s) to run`);
  expect(dry.stdout).toContain("0001-retired-indexes  expand  pending: drops the indexes");
  expect(dry.stdout).toContain("  resources: drop index live_order\n");
  expect(dry.stdout).toContain("  idempotency_keys: 1 records holding a gateway's HTTP answer\n");
  expect(dry.stdout).toContain("  resources: 1 resources without the name fields search reads\n");
  expect(dry.stdout).toContain("0005-rate-limit-tokens-expiry  expand  pending: deletes the gateway's rate-limit tokens without expires_at");
  expect(dry.stdout).toContain("  nothing to change (recorded as done when run)\n");
  expect(dry.lines.at(-1)).toBe("dry run: nothing was changed");
  // Nothing changed: no record, the old shapes as they were.
  expect(await db.collection(MIGRATIONS_COLLECTION).countDocuments()).toBe(0);
  expect((await db.collection("resources").indexes()).map((index) => index.name)).toContain("live_order");
  expect(await db.collection("resources").findOne({})).not.toHaveProperty("name_lower");

  const up = await rms("migrate", "up");
  console.log(up.stdout);
  expect(up.code).toBe(0);
  expect(up.lines.filter((line) => line.startsWith("migration: done ")).map((line) => JSON.parse(line.slice("migration: done ".length)).step)).toEqual(ids);
  expect(up.lines.at(-1)).toBe(`migrated ${databaseName} to ${RELEASE}: ${ids.length} step(s) run`);
  expect(await db.collection("resources").findOne({})).toMatchObject({ name_lower: "old", name_prefixes: ["ol", "old"] });

  const after = await rms("migrate", "status", "--json");
  expect(after.code).toBe(0);
  const status = JSON.parse(after.stdout);
  expect(status).toMatchObject({ object: "migration_status", release: RELEASE, database: databaseName, lease: null, rollback_floor: "1.4.0", contracts: [] });
  expect(status.steps.map((step: { id: string; state: string; finished_by_release: string }) => [step.id, step.state, step.finished_by_release])).toEqual(
    ids.map((id) => [id, "done", RELEASE]),
  );
  expect((await rms("migrate", "status")).lines[0]).toBe(`rms ${RELEASE}, database ${databaseName}: ${ids.length} of ${ids.length} steps done`);
  const nothing = [`rms ${RELEASE}, database ${databaseName}: every step is done, nothing to run`, "dry run: nothing was changed"];
  expect((await rms("migrate", "up", "--dry-run")).lines).toEqual(nothing);
  expect((await rms("migrate", "up")).lines).toEqual([`migrated ${databaseName} to ${RELEASE}: every step was done already`]);
});

it("needs the database: without MONGODB_URI it says so and exits 2", async () => {
  let stderr = "";
  const code = await runCli(["migrate", "status"], { env: {}, stdout: () => {}, stderr: (text) => (stderr += text) });
  expect(code).toBe(2);
  expect(stderr).toMatch(/^rms: MONGODB_URI/);
});
