// Both /metrics endpoints, after real traffic, parse as the Prometheus text format and pass promtool's lint rules
// (our linter always; `promtool check metrics` itself where it is installed).
import { lintExposition } from "@rms/metrics-server";
import { promtoolCheck, promtoolInstalled } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

it("gateway and core expositions are clean after successes, errors and health checks", async () => {
  const { key } = await withSecretKey(stack);
  const created = await stack.api.post("/v1/resources", { key, form: { name: "linted" } });
  expect(created.status).toBe(201);
  await stack.api.get("/v1/resources/res_0000000000000000000000", { key });
  await stack.api.get("/v1/status");
  await stack.api.get("/v1/nowhere");
  for (const port of [stack.gateway.metricsPort, stack.coreMetricsPort]) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(text.length).toBeGreaterThan(1_000);
    expect(lintExposition(text), `port ${port}`).toEqual([]);
    if (promtoolInstalled()) expect(promtoolCheck(text), `port ${port}`).toEqual({ status: 0, output: "" });
  }
});
