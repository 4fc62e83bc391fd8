// The read concern of the resources' reads (docs/database.md, "Read concern"): those whose result is the answer
// (retrieve, list, search) are `majority`, so no answer shows a write a cut-off primary took and then rolled back
// (apps/cli/src/chaos/partitions.e2e.test.ts shows MongoDB doing both); an update's own read, which decides its
// write, stays `local`. Seen in the commands the driver sends to the real server.
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import type { Tenant } from "../caller.js";
import { clientOptions } from "../storage/client-options.js";
import { ANSWER_PROJECTION } from "./model.js";
import { ResourceStore } from "./store.js";

const tenant: Tenant = { account: "acct_readconcern", livemode: false } as Tenant;
const request = { requestId: "req_rc", idempotencyKey: undefined };
let client: MongoClient;
let store: ResourceStore;
const commands: CommandStartedEvent[] = [];
const databaseName = testDatabaseName("read-concern");

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri"), { ...clientOptions(), monitorCommands: true }).connect();
  client.on("commandStarted", (event) => commands.push(event));
  store = new ResourceStore(client.db(databaseName));
  await store.ensureIndexes();
});

afterAll(async () => {
  await client.db(databaseName).dropDatabase();
  await client.close();
});

/** The read concern of each `find`/`aggregate` on resources that `run` sends. */
async function readConcernsOf(run: () => Promise<unknown>): Promise<string[]> {
  commands.length = 0;
  await run();
  return commands
    .filter((c) => (c.commandName === "find" || c.commandName === "aggregate") && (c.command.find ?? c.command.aggregate) === "resources")
    .map((c) => (c.command.readConcern as { level?: string } | undefined)?.level ?? "none");
}

it("retrieve, list and search read with `majority`; an update decides from a `local` read; each answer shows the acknowledged write", async () => {
  const created = await store.create(tenant, { name: "read-concern", status: "active", metadata: [] }, request as never);
  const id = "doc" in created ? created.doc._id : "";
  expect(id).toMatch(/^res_/);
  let found: Awaited<ReturnType<ResourceStore["get"]>> = null;
  expect(await readConcernsOf(async () => (found = await store.get(tenant, id)))).toEqual(["majority"]);
  expect(found).toMatchObject({ _id: id, name: "read-concern" });
  let page: Awaited<ReturnType<ResourceStore["list"]>> | undefined;
  expect(await readConcernsOf(async () => (page = await store.list(tenant, { limit: 10, filter: {} })))).toEqual(["majority"]);
  expect(page!.items.map((r) => r._id)).toEqual([id]);
  const searched = await readConcernsOf(() => store.search(tenant, { name: [{ value: "read-concern", prefix: false }] }, { limit: 10 }));
  expect(searched.length).toBeGreaterThan(0);
  expect(new Set(searched)).toEqual(new Set(["majority"]));
  // The update's read (storage/versioned-update.ts) carries the client's `local`.
  expect(await readConcernsOf(() => store.update(tenant, id, { status: "paused" }, request as never))).toEqual(["local"]);
  expect(await store.get(tenant, id)).toMatchObject({ status: "paused" });
  expect(
    await client
      .db(databaseName)
      .collection("resources")
      .findOne({ _id: id as never }),
  ).toMatchObject({ status: "paused", version: 1 });
});

it("retrieve, list and search read only the fields an answer shows (the name's prefixes, version and key scope stay in the database)", async () => {
  const created = await store.create(tenant, { name: "projected", status: "active", metadata: [{ k: "plan", v: "pro" }] }, request as never);
  const id = "doc" in created ? created.doc._id : "";
  const answerFields = Object.keys(ANSWER_PROJECTION).sort();
  const projections = async (run: () => Promise<unknown>) => {
    commands.length = 0;
    await run();
    return commands
      .filter((c) => (c.command.find ?? c.command.aggregate) === "resources")
      .map((c) => JSON.stringify(c.command.projection ?? c.command.pipeline?.at(-1)?.$facet?.page?.at(-1)?.$project));
  };
  const expected = JSON.stringify(ANSWER_PROJECTION);
  expect(await projections(() => store.get(tenant, id))).toEqual([expected]);
  expect(await projections(() => store.list(tenant, { limit: 10, filter: {} }))).toEqual([expected]);
  expect(await projections(() => store.search(tenant, { name: [{ value: "projected", prefix: false }] }, { limit: 10 }))).toEqual([expected]);
  // A search the index does not finish (an exact name with a metadata pair: the name's index, the pair checked on each
  // document) reads through the aggregate's window, and projects inside its page.
  const windowed = await projections(() =>
    store.search(tenant, { name: [{ value: "projected", prefix: false }], metadata: [{ k: "plan", v: "pro" }] }, { limit: 10 }),
  );
  expect(commands.map((c) => c.commandName)).toContain("aggregate");
  expect(windowed).toEqual([expected]);
  const found = await store.get(tenant, id);
  expect(Object.keys(found ?? {}).sort()).toEqual(answerFields.filter((field) => field !== "deleted"));
  const page = await store.list(tenant, { limit: 1, filter: {} });
  expect(Object.keys(page.items[0] ?? {}).sort()).toEqual(answerFields.filter((field) => field !== "deleted"));
});
