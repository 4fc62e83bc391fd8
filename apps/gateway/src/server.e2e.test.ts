import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoreClients } from "./core.js";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";

/** Holds the gateway's ListResources calls to the real core until released; `entered` resolves once one is held. */
function holdListCalls() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let enter!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  return {
    entered,
    release,
    wrap: (core: CoreClients): CoreClients => ({
      ...core,
      resources: new Proxy(core.resources, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (property !== "listResources" || typeof value !== "function") return value;
          return async (...args: unknown[]) => {
            enter();
            await released;
            return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        },
      }),
      health: (...args) => core.health(...args),
      close: () => core.close(),
    }),
  };
}

it("finishes in-flight requests on stop, then refuses new connections", async () => {
  const hold = holdListCalls();
  const t = await startStack({ gateway: { shutdownGraceMs: 5_000 }, wrapCore: hold.wrap });
  try {
    const { key } = await withSecretKey(t);
    const inFlight = t.api.get("/v1/resources", { key });
    await hold.entered;
    const stopped = t.gateway.stop();
    hold.release();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ object: "list", data: [] });
    expect(response.headers["connection"]).toBe("close");
    await stopped;
    await expect(t.api.get("/v1/status")).rejects.toThrow();
  } finally {
    hold.release();
    await t.stop();
  }
});

describe("listeners", () => {
  let t: Stack;
  beforeAll(async () => {
    t = await startStack({ trustedProxies: ["127.0.0.1"] });
  });
  afterAll(() => t?.stop());

  it("listens on free ports and reports them", () => {
    expect(t.gateway.httpsPort).toBeGreaterThan(0);
    expect(t.gateway.httpPort).toBeGreaterThan(0);
    expect(t.gateway.httpPort).not.toBe(t.gateway.httpsPort);
  });

  it("answers malformed HTTP with the envelope and a request id", async () => {
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
    expect(raw).toContain("X-Content-Type-Options: nosniff");
    const body = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "parameter_invalid" });
  });
});

it("can run without the plain-HTTP listener", async () => {
  const t = await startStack({ gateway: { httpPort: null } });
  try {
    expect(t.gateway.httpPort).toBeNull();
    expect((await t.api.get("/v1/status")).status).toBe(200);
  } finally {
    await t.stop();
  }
});
