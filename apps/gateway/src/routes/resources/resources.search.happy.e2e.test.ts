import { eventually } from "@rms/test-db/testkit";
import { Agent } from "node:https";
import Stripe from "stripe";
import { beforeAll, describe, expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

// GET /v1/resources/search (CONTRACT.md section 3, "Search") over 1,300 resources made by an import.
const ctx = useStackWithSecretKey({ worker: true });
/** Every resource, newest first, as the list gives them. */
let all: Json[] = [];

const SPECIAL = ["Staging cluster", "staging-db", "STAGING eu", "Staging cluster two", "It's mine", 'Quote "q"', "Ünïcode Ärger", "x"];

beforeAll(async () => {
  const items = Array.from({ length: 1_300 }, (_, i) => ({
    name: i < 1_300 - SPECIAL.length ? `Item ${i}` : SPECIAL[i - (1_300 - SPECIAL.length)]!,
    status: i % 4 === 0 ? "paused" : i % 7 === 0 ? "archived" : "active",
    metadata: { team: `t${i % 5}`, env: i % 3 === 0 ? "prod" : "dev", kind: "seeded" },
  }));
  const job = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items } } });
  await eventually(
    async () => {
      expect((await ctx.stack.api.get(`/v1/jobs/${job.json.id}`, { key: ctx.key })).json.status).toBe("succeeded");
    },
    { timeoutMs: 60_000 },
  );
  let cursor = "";
  for (;;) {
    const page = (await ctx.stack.api.get(`/v1/resources?limit=100${cursor}`, { key: ctx.key })).json as Json;
    all.push(...page.data);
    if (!page.has_more) break;
    cursor = `&starting_after=${all.at(-1)!.id}`;
  }
  all = all.filter(Boolean);
}, 120_000);

const get = (query: string, extra = "") => ctx.stack.api.get(`/v1/resources/search?query=${encodeURIComponent(query)}${extra}`, { key: ctx.key });

/** Every page of a search, in order: the ids and each page's size. */
async function walk(query: string, limit = 100): Promise<{ ids: string[]; pages: Json[] }> {
  const ids: string[] = [];
  const pages: Json[] = [];
  let page = "";
  for (let n = 0; n < 100; n++) {
    const response = await get(query, `&limit=${limit}${page}`);
    expect(response.status, JSON.stringify(response.json)).toBe(200);
    pages.push(response.json);
    ids.push(...response.json.data.map((r: Json) => r.id));
    if (!response.json.has_more) return { ids, pages };
    page = `&page=${response.json.next_page}`;
  }
  throw new Error("the walk did not end");
}

const lower = (r: Json) => (r.name as string).toLowerCase();

describe("search", () => {
  it("answers Stripe's search shape, newest first, 10 by default", async () => {
    expect(all).toHaveLength(1_300);
    const response = await get("status:'archived'");
    expect(response.status).toBe(200);
    expect(Object.keys(response.json)).toEqual(["object", "url", "has_more", "next_page", "data"]);
    expect(response.json).toMatchObject({ object: "search_result", url: "/v1/resources/search", has_more: true, next_page: expect.any(String) });
    expect(response.json.data.map((r: Json) => r.id)).toEqual(
      all
        .filter((r) => r.status === "archived")
        .slice(0, 10)
        .map((r) => r.id),
    );
    for (const item of response.json.data) expect(Object.keys(item)).toEqual(["id", "object", "name", "status", "metadata", "created"]);
    const last = await get("name:'Staging cluster two'");
    expect(last.json).toMatchObject({ has_more: false, next_page: null, data: [{ name: "Staging cluster two" }] });
  });

  const newest = () => all[0]!.created as number;
  const oldest = () => all.at(-1)!.created as number;
  it.each([
    ["status:'archived'", (r: Json) => r.status === "archived"],
    ["status:'archived' OR status:'paused'", (r: Json) => r.status !== "active"],
    ["name~'staging'", (r: Json) => lower(r).startsWith("staging")],
    ["name~'ITEM 12'", (r: Json) => lower(r).startsWith("item 12")],
    ["name~'item 1234' OR name~'item 99'", (r: Json) => lower(r).startsWith("item 1234") || lower(r).startsWith("item 99")],
    ["name~'staging clu'", (r: Json) => lower(r).startsWith("staging clu")],
    ["name~'staging cluster t'", (r: Json) => lower(r).startsWith("staging cluster t")],
    ["name~'ünï'", (r: Json) => lower(r).startsWith("ünï")],
    ["name:'It\\'s mine'", (r: Json) => r.name === "It's mine"],
    ['name:"Quote \\"q\\""', (r: Json) => r.name === 'Quote "q"'],
    ["name:'staging-db' OR name:'Staging-DB'", (r: Json) => r.name === "staging-db"],
    ["name:'x'", (r: Json) => r.name === "x"],
    ["metadata['team']:'t1' AND metadata['env']:'prod'", (r: Json) => r.metadata.team === "t1" && r.metadata.env === "prod"],
    ["metadata['team']:'t1' OR metadata['team']:'t2' AND status:'paused'", (r: Json) => ["t1", "t2"].includes(r.metadata.team) && r.status === "paused"],
    ["status:'archived' name~'item 1'", (r: Json) => r.status === "archived" && lower(r).startsWith("item 1")],
    ["metadata['kind']:'seeded' AND name~'item 2' AND status:'active'", (r: Json) => lower(r).startsWith("item 2") && r.status === "active"],
  ])("%s: walking every page returns every match once, newest first", async (query, matches) => {
    const { ids } = await walk(query);
    expect(ids).toEqual(all.filter(matches).map((r) => r.id));
  });

  it("created ranges, alone and with other clauses", async () => {
    expect((await walk(`created>=${oldest()} AND created<=${newest()}`)).ids).toEqual(all.map((r) => r.id));
    expect((await walk(`created>${newest()}`)).ids).toEqual([]);
    expect((await walk(`created<${oldest()} status:'active'`)).ids).toEqual([]);
    expect((await walk(`created:${newest()} AND name~'staging'`)).ids).toEqual(
      all.filter((r) => r.created === newest() && lower(r).startsWith("staging")).map((r) => r.id),
    );
  });

  it("clauses that cannot all hold find nothing", async () => {
    expect((await get("status:'active' AND status:'paused'")).json).toMatchObject({ has_more: false, next_page: null, data: [] });
    expect((await get("name~'staging' name~'item'")).json).toMatchObject({ has_more: false, data: [] });
  });

  it("bounds one request to 1,000 documents examined: a short or empty page with has_more, and next_page goes on exactly from there", async () => {
    // `kind` holds on all 1,300 and drives (metadata ranks above a name prefix); the prefix is checked on what it
    // yields. The 4 matches are among the newest: the first request reads 1,000 and finds them, a short page with
    // has_more; the second reads the other 300 and finds nothing more.
    const staging = await walk("metadata['kind']:'seeded' AND name~'staging'", 10);
    expect(staging.ids).toEqual(all.filter((r) => lower(r).startsWith("staging")).map((r) => r.id));
    expect(staging.pages.map((p) => [p.data.length, p.has_more])).toEqual([
      [4, true],
      [0, false],
    ]);
    // The only match is the oldest resource: the first page is empty but says there is more, and its next_page finds it.
    const oldest = await walk("metadata['kind']:'seeded' AND name~'item 0'", 10);
    expect(oldest.pages.map((p) => [p.data.length, p.has_more])).toEqual([
      [0, true],
      [1, false],
    ]);
    expect(oldest.ids).toEqual([all.at(-1)!.id]);
    // Many matches: full pages where the window holds them, every match once.
    const many = await walk("metadata['kind']:'seeded' AND metadata['team']:'t3'", 100);
    expect(many.ids).toEqual(all.filter((r) => r.metadata.team === "t3").map((r) => r.id));
  });

  it("reads its writes: a resource created or changed just before is found as it is now", async () => {
    const made = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "Fresh thing", metadata: { kind: "fresh" } } });
    expect((await get("name:'Fresh thing'")).json.data.map((r: Json) => r.id)).toEqual([made.json.id]);
    await ctx.stack.api.post(`/v1/resources/${made.json.id}`, { key: ctx.key, json: { name: "Renamed thing", status: "paused" } });
    expect((await get("name~'fresh'")).json.data).toEqual([]);
    expect((await get("name~'renamed' AND status:'paused'")).json.data).toMatchObject([{ id: made.json.id, name: "Renamed thing" }]);
    await ctx.stack.api.delete(`/v1/resources/${made.json.id}`, { key: ctx.key });
    expect((await get("metadata['kind']:'fresh'")).json.data).toEqual([]);
  });

  it("gives the same bytes for the query string, a JSON body and a form body", async () => {
    const query = "metadata['team']:'t1' AND status:'paused'";
    const first = await get(query, "&limit=3");
    const viaJson = await ctx.stack.api.get("/v1/resources/search", { key: ctx.key, json: { query, limit: 3 } });
    const viaForm = await ctx.stack.api.get("/v1/resources/search", { key: ctx.key, form: { query, limit: "3" } });
    expect(viaJson.text).toBe(first.text);
    expect(viaForm.text).toBe(first.text);
    const second = await ctx.stack.api.get("/v1/resources/search", { key: ctx.key, json: { query, limit: 3, page: first.json.next_page } });
    expect(second.json.data[0].id).not.toBe(first.json.data[0].id);
  });

  it("pages with stripe-node's search auto-paging (methodType search: next_page sent back as page)", async () => {
    const stripe = new Stripe(ctx.key, {
      host: "127.0.0.1",
      port: ctx.stack.gateway.httpsPort,
      protocol: "https",
      httpAgent: new Agent({ ca: ctx.stack.gateway.certificate }),
    });
    class Resources extends (Stripe as unknown as { StripeResource: new (stripe: Stripe) => object }).StripeResource {
      search(params: Json) {
        // biome-ignore lint/suspicious/noExplicitAny: stripe-node's request method is not in its public types.
        return (this as any)._makeRequest("GET", "/v1/resources/search", params, undefined, { methodType: "search" });
      }
    }
    const query = "metadata['team']:'t2' AND name~'item 1'";
    const found: Json[] = await new Resources(stripe).search({ query, limit: 7 }).autoPagingToArray({ limit: 1_000 });
    expect(found.map((r) => r.id)).toEqual(all.filter((r) => r.metadata.team === "t2" && lower(r).startsWith("item 1")).map((r) => r.id));
  });
});
