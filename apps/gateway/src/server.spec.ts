import { expect, it } from "vitest";
import { startUnitGateway } from "./testutil/unit-harness.js";

it("finishes in-flight requests on stop, then refuses new connections", async () => {
  const t = await startUnitGateway({ shutdownGraceMs: 5_000 });
  try {
    t.core.latencyMs = 400;
    const inFlight = t.api.get("/v1/resources", { key: t.keys.secret });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const stopped = t.gateway.stop();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(response.headers["connection"]).toBe("close");
    await stopped;
    await expect(t.api.get("/v1/status")).rejects.toThrow();
  } finally {
    await t.stop();
  }
});

it("listens on free ports and reports them", async () => {
  const t = await startUnitGateway();
  try {
    expect(t.gateway.httpsPort).toBeGreaterThan(0);
    expect(t.gateway.httpPort).toBeGreaterThan(0);
    expect(t.gateway.httpPort).not.toBe(t.gateway.httpsPort);
  } finally {
    await t.stop();
  }
});

it("can run without the plain-HTTP listener", async () => {
  const t = await startUnitGateway({ httpPort: null });
  try {
    expect(t.gateway.httpPort).toBeNull();
    expect((await t.api.get("/v1/status")).status).toBe(200);
  } finally {
    await t.stop();
  }
});
