import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { CoreClients } from "./core.js";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";
import { databaseRelay } from "./testutil/relay.js";

/** The gateway's deadline for core in this file (the production one is 10 s; the rule is the same). */
const DEADLINE_MS = 3_000;

function shortDeadline(core: CoreClients): CoreClients {
  const resources = new Proxy(core.resources, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function" || property === "close") return value;
      return (request: unknown, options: object = {}) => (value as (...a: unknown[]) => unknown).call(target, request, { ...options, timeoutMs: DEADLINE_MS });
    },
  });
  return { ...core, resources, admin: core.admin, health: core.health, close: core.close };
}

let relay: Awaited<ReturnType<typeof databaseRelay>>;
let stack: Stack;
let mongo: MongoClient;
let key: string;
let account: string;
beforeAll(async () => {
  relay = await databaseRelay();
  // Core reaches the database through the relay; the gateway's own records do not.
  stack = await startStack({ coreMongoUri: relay.uri, wrapCore: shortDeadline });
  const made = await withSecretKey(stack);
  key = made.key;
  account = made.account.id;
  mongo = new MongoClient(stack.mongoUri);
});
afterAll(async () => {
  await mongo?.close();
  await stack?.stop();
  await relay?.close();
});

const resources = () => mongo.db(stack.databaseName).collection<{ _id: string; account: string; name: string }>("resources");

it(
  "a create whose database reply never comes is 500 outcome_unknown, not 503; " + "it committed, and the retry with the same Idempotency-Key returns it, once",
  async () => {
    const headers = { "Idempotency-Key": "stalled-create" };
    // The commit of the create's transaction (the resource with its recorded answer), not the lock before it.
    relay.stallRepliesAfter("commitTransaction");
    const first = await stack.api.post("/v1/resources", { key, form: { name: "stalled" }, headers });
    relay.stallRepliesAfter(undefined);
    expect(first.status).toBe(500);
    expect(first.json.error).toMatchObject({ type: "api_error", code: "outcome_unknown" });
    expect(first.json.error.message).toContain("same Idempotency-Key");
    expect(first.headers["stripe-should-retry"]).toBe("true");
    // The commit reached the database: this is the write a 503 would have lied about.
    const stored = await resources().find({ account, name: "stalled" }).toArray();
    expect(stored).toHaveLength(1);

    // The answer committed with the resource, so the retry is its replay: the same resource, once.
    const retry = await eventually(
      async () => {
        const answer = await stack.api.post("/v1/resources", { key, form: { name: "stalled" }, headers });
        expect(answer.status).not.toBe(409);
        return answer;
      },
      { timeoutMs: 45_000, intervalMs: 200 },
    );
    expect(retry.status).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.json.id).toBe(stored[0]!._id);
    expect(await resources().countDocuments({ account, name: "stalled" })).toBe(1);
  },
);

it("an update whose database reply never comes is 500 outcome_unknown; a read that cannot finish is 503 (nothing was done)", async () => {
  const created = await stack.api.post("/v1/resources", { key, form: { name: "before" } });
  expect(created.status).toBe(201);
  relay.stallRepliesAfter("update\0");
  const updated = await stack.api.post(`/v1/resources/${created.json.id}`, { key, form: { name: "after" } });
  relay.stallRepliesAfter(undefined);
  expect(updated.status).toBe(500);
  expect(updated.json.error.code).toBe("outcome_unknown");
  expect((await resources().findOne({ _id: created.json.id }))?.name).toBe("after");

  relay.stallRepliesAfter("find\0");
  const read = await stack.api.get(`/v1/resources/${created.json.id}`, { key });
  relay.stallRepliesAfter(undefined);
  expect(read.status).toBe(503);
  expect(read.json.error.code).toBe("service_unavailable");
});
