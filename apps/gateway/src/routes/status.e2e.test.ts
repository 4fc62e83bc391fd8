import { RELEASE } from "@rms/config";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, type Stack } from "../testutil/harness.js";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

it("is operational, without a key", async () => {
  const response = await stack.api.get("/v1/status");
  expect(response.status).toBe(200);
  expect(response.text).toBe(`{"object":"status","status":"operational","version":"1.4","release":"${RELEASE}"}`);
  expect(response.headers["request-id"]).toMatch(/^req_/);
});

it("is degraded with 503 once core is gone, and API calls get 503 service_unavailable", async () => {
  const account = await stack.newAccount();
  const key = (await account.key("secret", "test")).secret;
  await stack.stopCore();
  const response = await stack.api.get("/v1/status");
  expect(response.status).toBe(503);
  expect(response.text).toBe(`{"object":"status","status":"degraded","version":"1.4","release":"${RELEASE}"}`);

  const call = await stack.api.get("/v1/resources", { key });
  expect(call.status).toBe(503);
  expect(call.json.error).toMatchObject({ type: "api_error", code: "service_unavailable" });
  expect(call.headers["retry-after"]).toBe("1");
});
