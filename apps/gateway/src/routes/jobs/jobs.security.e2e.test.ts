import { describe, expect, it } from "vitest";
import { useStackWithSecretKey, withSecretKey } from "../../testutil/harness.js";

const ctx = useStackWithSecretKey();

describe("GET /v1/jobs and /v1/jobs/{id}", () => {
  it("answers 404 for a job of another account or mode, and keeps lists apart", async () => {
    const job = (await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: [{ name: "mine" }] } } })).json
      .id as string;
    const other = (await withSecretKey(ctx.stack)).key;
    const live = (await ctx.account.key("secret", "live")).secret;
    for (const stranger of [other, live]) {
      for (const [method, path] of [
        ["GET", `/v1/jobs/${job}`],
        ["GET", `/v1/jobs/${job}/errors`],
        ["POST", `/v1/jobs/${job}/cancel`],
      ] as const) {
        const response = method === "GET" ? await ctx.stack.api.get(path, { key: stranger }) : await ctx.stack.api.post(path, { key: stranger });
        expect(response.status).toBe(404);
        expect(response.json.error).toMatchObject({ code: "resource_missing", param: "id" });
      }
      expect((await ctx.stack.api.get("/v1/jobs", { key: stranger })).json.data).toEqual([]);
    }
    expect((await ctx.stack.api.get(`/v1/jobs/${job}`, { key: ctx.key })).json.status).toBe("queued");
  });
});

describe("scopes", () => {
  it("jobs:read reads, jobs:write also writes (and reads), other keys get 403", async () => {
    const owner = await ctx.stack.newAccount();
    const secret = (await owner.key("secret")).secret;
    const job = (await ctx.stack.api.post("/v1/jobs", { key: secret, json: { type: "resources.import", params: { items: [{ name: "s" }] } } })).json
      .id as string;
    const reader = (await owner.key("restricted", "test", { scopes: ["jobs:read"] })).secret;
    const writer = (await owner.key("restricted", "test", { scopes: ["jobs:write"] })).secret;
    const resourcesOnly = (await owner.key("restricted", "test", { scopes: ["resources:read", "resources:write"] })).secret;
    const publishable = (await owner.key("publishable")).secret;
    const create = (k: string) => ctx.stack.api.post("/v1/jobs", { key: k, json: { type: "resources.import", params: { items: [{ name: "s" }] } } });

    for (const k of [reader, writer]) {
      expect((await ctx.stack.api.get("/v1/jobs", { key: k })).status).toBe(200);
      expect((await ctx.stack.api.get(`/v1/jobs/${job}`, { key: k })).status).toBe(200);
      expect((await ctx.stack.api.get(`/v1/jobs/${job}/errors`, { key: k })).status).toBe(200);
    }
    expect((await create(writer)).status).toBe(201);
    expect((await ctx.stack.api.post(`/v1/jobs/${job}/cancel`, { key: writer })).status).toBe(200);
    const refused = await create(reader);
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ type: "permission_error", code: "insufficient_scope" });
    expect((await ctx.stack.api.post(`/v1/jobs/${job}/cancel`, { key: reader })).json.error.code).toBe("insufficient_scope");
    expect((await ctx.stack.api.get("/v1/jobs", { key: resourcesOnly })).json.error.code).toBe("insufficient_scope");
    expect((await create(resourcesOnly)).json.error.code).toBe("insufficient_scope");
    expect((await ctx.stack.api.get("/v1/jobs", { key: publishable })).status).toBe(403);
    expect((await create(publishable)).json.error.code).toBe("publishable_key_read_only");
  });
});
