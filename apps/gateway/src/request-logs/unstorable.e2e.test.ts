import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../testutil/harness.js";

// A parameter whose name the database cannot hold as a field name (a NUL byte) is one request among others: its
// record is stored like any other, and the records of every other account after it are written too (issue 41).

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.stop());

describe("a request whose parameters no database field name can hold", () => {
  it("is recorded with its parameters as sent, and holds no other account's records back", async () => {
    const bad = await stack.newAccount();
    const badKey = (await bad.key("secret", "test")).secret;
    const refused = await stack.api.get("/v1/resources?a%00b=1&c.d=2&%24where=3", { key: badKey });
    expect(refused.status).toBe(400);

    const others = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const account = await stack.newAccount();
        const key = (await account.key("secret", "test")).secret;
        const answer = await stack.api.get("/v1/resources", { key });
        expect(answer.status).toBe(200);
        return { key, id: answer.headers["request-id"]! };
      }),
    );
    // Batches are written a quarter of a second apart; the bound only keeps a held recorder from hanging the test.
    await eventually(
      async () => {
        for (const other of others) expect((await stack.api.get(`/v1/request_logs/${other.id}`, { key: other.key })).status).toBe(200);
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const log = await stack.api.get(`/v1/request_logs/${refused.headers["request-id"]}`, { key: badKey });
    expect(log.status).toBe(200);
    expect(log.json).toMatchObject({ status: 400, error_code: "parameter_unknown", request_params: { "a\u0000b": "1", "c.d": "2", $where: "3" } });
  });

  it("keeps metadata names as they were sent, NUL bytes and __proto__ included, in the parameters and the answer", async () => {
    const account = await stack.newAccount();
    const key = (await account.key("secret", "test")).secret;
    const metadata = JSON.parse('{"__proto__":"p","a\\u0000b":"n","$x.y":"d"}') as Record<string, string>;
    const created = await stack.api.post("/v1/resources", { key, json: { name: "odd names", metadata } });
    expect(created.status).toBe(201);
    const log = await eventually(
      async () => {
        const found = await stack.api.get(`/v1/request_logs/${created.headers["request-id"]}`, { key });
        expect(found.status).toBe(200);
        return found.json;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(Object.entries(log.request_params.metadata)).toEqual(Object.entries(metadata));
    expect(log.response_body).toEqual(created.json);
  });
});
