import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";

// REQUEST_LOGS=off (the bench's comparison): the gateway starts no recorder, so nothing is recorded; the list still
// answers (empty), and the answers still carry the rate-limit headers.

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ gateway: { requestLogs: { enabled: false, buffer: 10_000, retentionDays: 14 } } });
});
afterAll(() => stack?.stop());

it("records nothing and still serves the list", async () => {
  const { key } = await withSecretKey(stack);
  const created = await stack.api.post("/v1/resources", { key, json: { name: "unlogged" } });
  expect(created.status).toBe(201);
  expect(created.headers["ratelimit"]).toMatch(/^"key";r=\d+;t=\d+$/);
  const list = await stack.api.get("/v1/request_logs", { key });
  expect(list.status).toBe(200);
  expect(list.json).toEqual({ object: "list", url: "/v1/request_logs", has_more: false, data: [] });
  const metrics = await (await fetch(`http://127.0.0.1:${stack.gateway.metricsPort}/metrics`)).text();
  // No recorder: its gauge is not registered, and nothing was ever queued or written.
  expect(metrics).not.toContain("gateway_request_logs_waiting");
  expect(metrics).toContain("gateway_request_logs_written_total 0");
});
