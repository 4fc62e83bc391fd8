import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { startMetricsServer } from "./index.js";

describe("startMetricsServer", () => {
  it("serves the registry at /metrics on loopback and nothing else", async () => {
    const registry = new Registry();
    new Counter({ name: "demo_total", help: "demo", registers: [registry] }).inc(3);
    const server = await startMetricsServer(registry, 0);
    try {
      const metrics = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain("demo_total 3");
      expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: "POST" })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
