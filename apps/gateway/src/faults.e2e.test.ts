import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";
import { databaseRelay } from "./testutil/relay.js";

/** Retries `attempt` until its answer is no longer 503 (bounded generously); returns that answer. */
function untilNot503<T extends { status: number }>(attempt: () => Promise<T>): Promise<T> {
  return eventually(
    async () => {
      const response = await attempt();
      expect(response.status).not.toBe(503);
      return response;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

describe("the gateway alone cannot reach the database (its own stores: rate limits, pending revocations)", () => {
  let stack: Stack;
  let proxy: Awaited<ReturnType<typeof databaseRelay>>;
  beforeAll(async () => {
    proxy = await databaseRelay();
    stack = await startStack({ gateway: { mongoUri: proxy.uri } });
  });
  afterAll(async () => {
    await stack?.stop();
    await proxy?.close();
  });

  it("serves POSTs under a key all the same (the key's record is core's), and replays them once the database is back", async () => {
    const { key } = await withSecretKey(stack);
    const target = await stack.api.post("/v1/resources", { key, json: { name: "target" } });
    const update = () => stack.api.post(`/v1/resources/${target.json.id}`, { key, json: { name: "while down" }, headers: { "idempotency-key": "down-2" } });
    const create = () => stack.api.post("/v1/resources", { key, json: { name: "while down" }, headers: { "idempotency-key": "down" } });
    await proxy.cut();
    let updated: Awaited<ReturnType<typeof update>>;
    let created: Awaited<ReturnType<typeof create>>;
    try {
      updated = await update();
      expect(updated.status).toBe(200);
      expect(updated.json.name).toBe("while down");
      created = await create();
      expect(created.status).toBe(201);
    } finally {
      await proxy.restore();
    }
    const [again, createdAgain] = [await update(), await create()];
    expect([again.headers["idempotent-replayed"], again.text]).toEqual(["true", updated.text]);
    expect([createdAgain.headers["idempotent-replayed"], createdAgain.text]).toEqual(["true", created.text]);
    expect((await stack.api.get("/v1/resources", { key })).json.data).toHaveLength(2);
  }, 120_000);
});

describe("core is unreachable", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.stop());

  it("answers 503 with Retry-After, records nothing, and serves again when core is back (no restart of the gateway)", async () => {
    const { key } = await withSecretKey(stack);
    await stack.stopCore();
    for (const request of [
      () => stack.api.get("/v1/resources", { key }),
      () => stack.api.post("/v1/resources", { key, json: { name: "core down" }, headers: { "idempotency-key": "core-down" } }),
    ]) {
      const response = await request();
      expect(response.status).toBe(503);
      expect(response.json.error).toMatchObject({ type: "api_error", code: "service_unavailable" });
      expect(response.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
    }
    await stack.restartCore();
    const back = await untilNot503(() => stack.api.post("/v1/resources", { key, json: { name: "core down" }, headers: { "idempotency-key": "core-down" } }));
    expect(back.status).toBe(201);
    expect(back.headers["idempotent-replayed"]).toBeUndefined();
    expect((await stack.api.get("/v1/resources", { key })).json.data).toHaveLength(1);
  }, 120_000);
});
