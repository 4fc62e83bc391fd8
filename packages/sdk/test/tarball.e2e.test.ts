import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Consumer, makeConsumer } from "./consumer.js";
import { FaultyProxy } from "./proxy.js";
import { type Stack, startStack } from "./stack.js";

/** The release the tarball says it is: the package's own version. */
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/*
 * The SDK as an integrator gets it: `npm pack -w @rms/sdk`, installed into an empty directory outside the repository
 * (no workspace package there), its scripts run with the machine's Node against a real stack. Each script is a file of
 * test/consumer/ that reports what it saw as one JSON line. A proxy of the test's own sits between the SDK and the
 * gateway where a test needs the network to fail: it loses an answer, cuts a download, or answers 429 and 503 itself.
 */

let stack: Stack;
let consumer: Awaited<ReturnType<typeof makeConsumer>>;
let proxy: FaultyProxy;
let direct: Record<string, string>;
let proxied: Record<string, string>;

beforeAll(async () => {
  [stack, consumer] = await Promise.all([startStack({ RATE_LIMIT_TEST: "1000" }), makeConsumer()]);
  proxy = new FaultyProxy({ host: "localhost", port: stack.port, ca: stack.cert }, { cert: stack.cert, key: stack.key });
  const proxyPort = await proxy.listen();
  direct = { RMS_API_KEY: stack.secretKey, RMS_BASE_URL: `https://localhost:${stack.port}`, RMS_CA: stack.certPath };
  proxied = { ...direct, RMS_BASE_URL: `https://localhost:${proxyPort}` };
  console.log(`sdk tarball ${consumer.tarball} installed in ${consumer.dir}; scripts run on Node ${consumer.node.version} (${consumer.node.path})`);
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await stack?.stop();
  (consumer as Consumer | undefined)?.remove();
});

describe("the packed SDK, installed into an empty project", () => {
  it("brings nothing else: no dependency, no workspace package", () => {
    expect(consumer.installed).toEqual([]);
  });

  it("loads with require too (its CommonJS build), with every namespace", async () => {
    const facts = await consumer.script("required.cjs", {});
    expect(facts).toMatchObject({ version: PACKAGE_VERSION, errors: "function", verify: "function" });
    expect(facts["namespaces"]).toEqual(
      expect.arrayContaining(["resources", "events", "webhookEndpoints", "jobs", "files", "uploads", "requestLogs", "dashboardSessions", "status"]),
    );
  });

  it("creates a resource without an idempotency key and with one (the repeat is a replay)", async () => {
    const facts = await consumer.script("create.mjs", direct);
    expect(facts["plain"]).toMatchObject({ name: "made by the SDK", metadata: { source: "sdk" }, status: 201, requestId: expect.stringMatching(/^req_/) });
    // lastResponse is on the answer but not one of its fields.
    expect(facts["enumerable"]).toEqual(["id", "object", "name", "status", "metadata", "created"]);
    expect(Object.keys(facts["json"] as object)).not.toContain("lastResponse");
    const keyed = facts["keyed"] as { id: string };
    expect(facts["keyed"]).toMatchObject({ status: "paused", replayed: null });
    expect(facts["again"]).toEqual({ id: keyed.id, replayed: "true" });
  });

  it("answers a 404 as RMSInvalidRequestError with its request id", async () => {
    const facts = await consumer.script("not-found.mjs", direct);
    expect(facts).toMatchObject({
      thrown: true,
      invalidRequest: true,
      rmsError: true,
      name: "RMSInvalidRequestError",
      type: "invalid_request_error",
      code: "resource_missing",
      statusCode: 404,
      requestId: expect.stringMatching(/^req_/),
    });
    expect(facts["headerRequestId"]).toBe(facts["requestId"]);
  });

  it("waits for an import job of 250, then iterates the filtered list and a search of them: each once, the filters on every page", async () => {
    proxy.set([]);
    const facts = await consumer.script("list-and-search.mjs", proxied);
    const batch = facts["batch"] as string;
    expect(facts["job"]).toMatchObject({ status: "succeeded", created: 250 });
    expect(facts["firstPage"]).toEqual({ object: "list", count: 40, hasMore: true });
    for (const walk of ["listed", "searched"] as const) {
      const items = facts[walk] as { id: string; batch: string; status: string }[];
      expect(items.length, walk).toBe(250);
      expect(new Set(items.map((i) => i.id)).size, walk).toBe(250);
      expect(
        items.every((i) => i.batch === batch && i.status === "active"),
        walk,
      ).toBe(true);
    }
    const listPages = proxy.seen.filter((s) => s.method === "GET" && s.url.startsWith("/v1/resources?"));
    const searchPages = proxy.seen.filter((s) => s.method === "GET" && s.url.startsWith("/v1/resources/search?"));
    // One page awaited, then 7 walked (250 in pages of 40); every request kept the filters.
    expect(listPages.length).toBe(1 + 7);
    for (const page of listPages) {
      const query = new URLSearchParams(page.url.split("?")[1]);
      expect([query.get("metadata[batch]"), query.get("status"), query.get("limit")], page.url).toEqual([batch, "active", "40"]);
    }
    expect(listPages.slice(2).every((p) => new URLSearchParams(p.url.split("?")[1]).get("starting_after")?.startsWith("res_"))).toBe(true);
    expect(searchPages.length).toBeGreaterThanOrEqual(7);
    for (const page of searchPages) expect(new URLSearchParams(page.url.split("?")[1]).get("query"), page.url).toContain(batch);
  });

  it("uploads a 100 MiB file from its path in parts and downloads it byte for byte, once whole and once resumed after a cut", async () => {
    proxy.set([
      { method: "GET", path: /^\/v1\/files\/file_[^/]+\/contents$/, fault: { kind: "pass" }, times: 1 },
      { method: "GET", path: /^\/v1\/files\/file_[^/]+\/contents$/, fault: { kind: "cut-body-half" }, times: 1 },
    ]);
    const started = Date.now();
    const facts = await consumer.script("files.mjs", proxied);
    const size = 100 * 1024 * 1024;
    expect(facts["file"]).toMatchObject({ size, sha256: facts["sha256"], filename: "big.jsonl", requestId: expect.stringMatching(/^req_/) });
    const parts = proxy.seen.filter((s) => s.method === "POST" && /^\/v1\/uploads\/upl_[^/]+\/parts$/.test(s.url));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    expect(proxy.seen.filter((s) => s.method === "POST" && s.url === "/v1/files")).toEqual([]);
    expect(facts["progress"]).toMatchObject({ growing: true, last: [size, size] });
    expect(facts["whole"]).toEqual({ bytes: size, sha256: facts["sha256"] });
    expect(facts["resumed"]).toEqual({ bytes: size, sha256: facts["sha256"] });
    const contents = proxy.seen.filter((s) => /\/contents$/.test(s.url));
    expect(contents.map((s) => s.did)).toEqual(["pass", "cut-body-half", "pass"]);
    const range = String(contents[2]!.headers["range"]);
    const from = Number(/^bytes=(\d+)-$/.exec(range)?.[1]);
    // The proxy cut after half the bytes; what was still in flight on the socket was lost with it.
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThanOrEqual(size / 2 + 1024 * 1024);
    console.log(`100 MiB: uploaded in ${parts.length} parts, downloaded twice (the second cut at byte ${from}, resumed) in ${Date.now() - started} ms`);
  }, 600_000);

  it("verifies a real delivery of a v1 (whsec_) and a v1a (whpk_) endpoint, and refuses each with its body changed", async () => {
    const facts = await consumer.script("webhooks.mjs", direct);
    expect(facts).toMatchObject({ secret: "whsec_", publicKey: "whpk_" });
    for (const scheme of ["v1", "v1a"] as const) {
      expect(facts[scheme], scheme).toMatchObject({
        delivered: true,
        type: "resource.created",
        objectId: facts["resource"],
        signature: scheme,
        tamperedChanged: true,
        refused: expect.stringMatching(/signature/),
      });
    }
  });
});

describe("retries", () => {
  it("a create whose answer is lost after the gateway made it is sent again with the same key: one resource", async () => {
    proxy.set([{ method: "POST", path: /^\/v1\/resources$/, fault: { kind: "lose-answer" }, times: 1 }]);
    const facts = await consumer.script("lost-answer.mjs", proxied);
    const creates = proxy.seen.filter((s) => s.method === "POST" && s.url === "/v1/resources");
    expect(creates.map((s) => [s.did, s.status, s.replayed])).toEqual([
      ["lose-answer", 201, false],
      ["pass", 201, true],
    ]);
    const key = creates[0]!.headers["idempotency-key"];
    expect(key).toMatch(/^sdk-/);
    expect(creates[1]!.headers["idempotency-key"]).toBe(key);
    expect(facts["found"]).toEqual([facts["created"]]);
    expect(facts["replayed"]).toBe("true");
  });

  it("a 429 is sent again no sooner than its Retry-After", async () => {
    const tooMany = { error: { type: "rate_limit_error", code: "rate_limited", message: "Too many requests.", request_id: "req_proxy" } };
    proxy.set([{ method: "GET", path: /^\/v1\/resources$/, fault: { kind: "answer", status: 429, headers: { "Retry-After": "2" }, body: tooMany }, times: 1 }]);
    const facts = await consumer.script("rate-limited.mjs", proxied);
    expect(facts).toEqual({ object: "list", statusCode: 200 });
    const tries = proxy.seen.filter((s) => s.url.startsWith("/v1/resources?"));
    expect(tries.map((s) => s.did)).toEqual(["answer", "pass"]);
    const waited = tries[1]!.at - tries[0]!.at;
    console.log(`429 with Retry-After: 2 -> retried after ${waited} ms`);
    expect(waited).toBeGreaterThanOrEqual(2000);
  });

  it("a 503 with Stripe-Should-Retry: false is not sent again; one without it is", async () => {
    const down = { error: { type: "api_error", code: "service_unavailable", message: "Unavailable.", request_id: "req_proxy" } };
    const existing = ((await consumer.script("create.mjs", direct))["plain"] as { id: string }).id;
    proxy.set([
      { method: "GET", path: /^\/v1\/resources$/, fault: { kind: "answer", status: 503, headers: { "Stripe-Should-Retry": "false" }, body: down }, times: 1 },
      { method: "GET", path: /^\/v1\/resources\/res_/, fault: { kind: "answer", status: 503, headers: {}, body: down }, times: 1 },
    ]);
    const facts = await consumer.script("should-not-retry.mjs", proxied, [existing]);
    expect(facts).toEqual({ refused: { thrown: true, apiError: true, statusCode: 503, code: "service_unavailable" }, retried: existing });
    expect(proxy.seen.filter((s) => s.url.startsWith("/v1/resources?")).length).toBe(1);
    expect(proxy.seen.filter((s) => s.url.startsWith("/v1/resources/res_")).map((s) => s.did)).toEqual(["answer", "pass"]);
  });
});

describe("the SDK's types, in a consumer project under tsc --strict", () => {
  it("accept a correct use", async () => {
    const { code, output } = await consumer.typeCheck(["good.ts"]);
    expect(output).toBe("");
    expect(code).toBe(0);
  });

  it("refuse each misuse of a parameter: a wrong status, a missing name, both cursors", async () => {
    const { code, output } = await consumer.typeCheck(["bad.ts"]);
    expect(code).not.toBe(0);
    const lines = [...output.matchAll(/^bad\.ts\((\d+),\d+\): error/gm)].map((m) => Number(m[1]));
    // Every line marked `misuse` in bad.ts, and no other.
    expect([...new Set(lines)]).toEqual([7, 8, 9, 10]);
    expect(output).toMatch(/"actve"/);
    expect(output).toMatch(/Property 'name' is missing/);
  });
});
