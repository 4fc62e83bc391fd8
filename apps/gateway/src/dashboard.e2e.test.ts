import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "./testutil/harness.js";

const CSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";

function expectDashboardHeaders(headers: Readonly<Record<string, string | undefined>>): void {
  expect(headers["content-security-policy"]).toBe(CSP);
  expect(headers["content-security-policy"]).not.toContain("unsafe-inline");
  expect(headers["referrer-policy"]).toBe("no-referrer");
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["set-cookie"]).toBeUndefined();
}

describe("the dashboard's files at /dashboard/", () => {
  let stack: Stack;
  const dir = mkdtempSync(join(tmpdir(), "rms-dashboard-dist-"));
  beforeAll(async () => {
    mkdirSync(join(dir, "assets"));
    writeFileSync(join(dir, "index.html"), '<!doctype html><script type="module" src="/dashboard/assets/index-AbC123.js"></script>');
    writeFileSync(join(dir, "assets", "index-AbC123.js"), "console.log('dashboard');\n");
    writeFileSync(join(dir, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
    stack = await startStack({ gateway: { dashboardDir: dir } });
  });
  afterAll(async () => {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves index.html with the security headers, never cached without revalidation", async () => {
    const response = await stack.api.get("/dashboard/");
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/html/);
    expect(response.text).toContain("index-AbC123.js");
    expect(response.headers["cache-control"]).toBe("no-cache");
    expectDashboardHeaders(response.headers);
  });

  it("serves a deep link as index.html (the router shows the page), and /dashboard moves to /dashboard/", async () => {
    const deep = await stack.api.get("/dashboard/resources/res_0000000000000000000000?status=active");
    expect(deep.status).toBe(200);
    expect(deep.text).toContain("index-AbC123.js");
    expect(deep.headers["cache-control"]).toBe("no-cache");
    expectDashboardHeaders(deep.headers);
    const bare = await stack.api.get("/dashboard");
    expect(bare.status).toBe(301);
    expect(bare.headers["location"]).toBe("/dashboard/");
  });

  it("caches hashed assets for a year; a missing asset is a 404, not the page", async () => {
    const asset = await stack.api.get("/dashboard/assets/index-AbC123.js");
    expect(asset.status).toBe(200);
    expect(asset.headers["content-type"]).toMatch(/javascript/);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expectDashboardHeaders(asset.headers);
    const missing = await stack.api.get("/dashboard/assets/index-Old999.js");
    expect(missing.status).toBe(404);
    expect(missing.text).not.toContain("<script");
    const icon = await stack.api.get("/dashboard/favicon.svg");
    expect(icon.status).toBe(200);
    expect(icon.headers["cache-control"]).toBe("no-cache");
  });

  it("answers only GET and HEAD; the API beside it is unchanged", async () => {
    const post = await stack.api.post("/dashboard/", { json: {} });
    expect(post.status).toBe(405);
    expect(post.headers["allow"]).toBe("GET, HEAD");
    const api = await stack.api.get("/v1/nothing-here");
    expect(api.status).toBe(404);
    expect(api.json.error).toMatchObject({ code: "route_missing" });
    expect(api.headers["content-security-policy"]).toBeUndefined();
  });

  it("refuses plain HTTP like every path", async () => {
    const plain = await stack.plain.get("/dashboard/");
    expect(plain.status).toBe(403);
    expect(plain.json.error).toMatchObject({ code: "https_required" });
  });
});

describe("a gateway without a dashboard build", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ gateway: { dashboardDir: join(tmpdir(), "rms-no-such-dashboard-build") } });
  });
  afterAll(() => stack.stop());

  it("starts, serves the API, and answers every dashboard path with a 404 page saying how to build it", async () => {
    expect((await stack.api.get("/v1/status")).status).toBe(200);
    for (const path of ["/dashboard/", "/dashboard/resources", "/dashboard/assets/index-AbC123.js"]) {
      const response = await stack.api.get(path);
      expect(response.status).toBe(404);
      expect(response.headers["content-type"]).toMatch(/^text\/html/);
      expect(response.text).toContain("The dashboard is not built");
      expect(response.text).toContain("npm run build");
      expectDashboardHeaders(response.headers);
    }
  });
});
