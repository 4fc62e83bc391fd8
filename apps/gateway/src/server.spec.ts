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

it("answers malformed HTTP with the envelope and a request id", async () => {
  const t = await startUnitGateway({ trustedProxies: ["127.0.0.1"] });
  try {
    const { connect } = await import("node:net");
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(t.gateway.httpPort!, "127.0.0.1", () => socket.write("GET /v1/status HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n"));
      let data = "";
      socket.on("data", (chunk) => (data += chunk));
      socket.on("end", () => resolve(data));
      socket.on("error", reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toMatch(/Request-Id: req_\w+/);
    expect(raw).toContain("Api-Version: 1.4");
    const body = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "parameter_invalid" });
  } finally {
    await t.stop();
  }
});
