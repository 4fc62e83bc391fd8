import { eventually } from "@rms/test-db/testkit";
import { beforeAll, expect, it } from "vitest";
import { toForm } from "../../testutil/client.js";
import { useStackWithSecretKey, withSecretKey } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

// CONTRACT.md section 3, "The filter model": one filter, the same resources in the list, search and a bulk job.
const ctx = useStackWithSecretKey({ worker: true });
const made: { id: string; status: string; team: string }[] = [];
let foreign: string;
beforeAll(async () => {
  for (let i = 0; i < 40; i++) {
    const status = i % 5 === 0 ? "archived" : i % 3 === 0 ? "paused" : "active";
    const team = ["red", "blue", "green"][i % 3]!;
    const response = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: `Unit ${i}`, status, metadata: { team, n: i } } });
    made.push({ id: response.json.id, status, team });
  }
  foreign = (await ctx.stack.api.post("/v1/resources", { key: (await withSecretKey(ctx.stack)).key, json: { name: "Unit x", metadata: { team: "red" } } })).json
    .id;
});

/** Every id a list walk returns for `filter` (in the query string), in order, 7 per page. */
async function listWalk(filter: Json): Promise<string[]> {
  const seen: string[] = [];
  for (let page = 0; page < 50; page++) {
    const cursor = seen.length > 0 ? `&starting_after=${seen.at(-1)}` : "";
    const response = await ctx.stack.api.get(`/v1/resources?limit=7&${toForm(filter)}${cursor}`, { key: ctx.key });
    expect(response.status, JSON.stringify(response.json)).toBe(200);
    seen.push(...response.json.data.map((r: Json) => r.id));
    if (!response.json.has_more) return seen;
  }
  throw new Error("the walk did not end");
}

/** Every id a search walk returns for `query`, in order, 5 per page. */
async function searchWalk(query: string): Promise<string[]> {
  const seen: string[] = [];
  let page = "";
  for (let n = 0; n < 50; n++) {
    const response = await ctx.stack.api.get(`/v1/resources/search?limit=5&query=${encodeURIComponent(query)}${page}`, { key: ctx.key });
    expect(response.status, JSON.stringify(response.json)).toBe(200);
    seen.push(...response.json.data.map((r: Json) => r.id));
    if (!response.json.has_more) return seen;
    page = `&page=${response.json.next_page}`;
  }
  throw new Error("the walk did not end");
}

/** The ids a bulk update with `filter` touched (each gets `metadata[mark]`), the job sent as JSON or as a form. */
async function jobTouched(filter: Json, mark: string, encoding: "json" | "form"): Promise<string[]> {
  const body = { type: "resources.bulk_update", params: { filter, update: { metadata: { mark } } } };
  const response = await ctx.stack.api.post("/v1/jobs", encoding === "json" ? { key: ctx.key, json: body } : { key: ctx.key, form: toForm(body) });
  expect(response.status, JSON.stringify(response.json)).toBe(201);
  // The job echoes the filter as given.
  expect(response.json.params.filter).toEqual(filter);
  await eventually(
    async () => {
      const job = (await ctx.stack.api.get(`/v1/jobs/${response.json.id}`, { key: ctx.key })).json as Json;
      expect(job.status).toBe("succeeded");
    },
    { timeoutMs: 30_000 },
  );
  return listWalk({ metadata: { mark } });
}

const sorted = (ids: string[]) => [...ids].sort();

it.each([
  ["several statuses", { status: ["paused", "archived"] }, "status:'paused' OR status:'archived'", "json"],
  ["one metadata key and a status", { metadata: { team: "red" }, status: "active" }, "metadata['team']:'red' AND status:'active'", "form"],
  [
    "a created range with metadata",
    { created: { gte: 0, lte: 4_102_444_800 }, metadata: { team: "blue" } },
    "created>=0 created<=4102444800 metadata['team']:'blue'",
    "json",
  ],
  ["a created range that ends before them", { created: { lt: 1 }, status: "active" }, "created<1 AND status:'active'", "form"],
] as const)("%s: the list, search and a bulk update select the same resources", async (_label, filter, query, encoding) => {
  const listed = await listWalk(filter);
  const searched = await searchWalk(query);
  expect(searched).toEqual(listed);
  if (listed.length > 0) expect(sorted(await jobTouched(filter, `m${made.length}${encoding}${listed.length}`, encoding))).toEqual(sorted(listed));
  // What the filter says, checked against what was made (the foreign resource is never in).
  expect(listed).not.toContain(foreign);
});

it("ids (with a foreign and an unknown one): the list and a bulk update select the same resources, both encodings", async () => {
  const chosen = [...made.filter((_, i) => i % 4 === 0).map((r) => r.id), foreign, `res_${"0".repeat(22)}`];
  const filter = { ids: chosen, status: ["active", "archived"] };
  const listed = await listWalk(filter);
  const expected = made.filter((r, i) => i % 4 === 0 && r.status !== "paused").map((r) => r.id);
  expect(sorted(listed)).toEqual(sorted(expected));
  expect(listed).toEqual([...listed].sort().reverse());
  expect(sorted(await jobTouched(filter, "ids-json", "json"))).toEqual(sorted(listed));
  expect(sorted(await jobTouched(filter, "ids-form", "form"))).toEqual(sorted(listed));
});
