import { describe, expect, it } from "vitest";
import { useStackWithDatabase, withSecretKey } from "../../testutil/harness.js";
import { JOB_FIELDS, RES_ID, setJob } from "../../testutil/jobs.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

const ctx = useStackWithDatabase();

describe("GET /v1/jobs and /v1/jobs/{id}", () => {
  it("lists newest first with status, type and created filters and keyset cursors; retrieves one", async () => {
    const { key: own, account: mine } = await withSecretKey(ctx.stack);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const body =
        i % 2 === 0
          ? { type: "resources.import", params: { items: [{ name: `n${i}` }] } }
          : { type: "resources.bulk_delete", params: { filter: { ids: [RES_ID] } } };
      ids.push((await ctx.stack.api.post("/v1/jobs", { key: own, json: body })).json.id);
    }
    await setJob(ctx.db, ids[1]!, { status: "succeeded", finished_at: 1_800_000_000, result: { deleted: 1, errors: [] } });
    const list = (await ctx.stack.api.get("/v1/jobs", { key: own })).json as Json;
    expect(Object.keys(list)).toEqual(["object", "url", "has_more", "data"]);
    expect(list).toMatchObject({ object: "list", url: "/v1/jobs", has_more: false });
    expect(list.data.map((j: Json) => j.id)).toEqual([...ids].reverse());
    for (const job of list.data) expect(Object.keys(job)).toEqual(JOB_FIELDS);

    const idsOf = async (query: string) => ((await ctx.stack.api.get(`/v1/jobs?${query}`, { key: own })).json.data as Json[]).map((j) => j.id);
    expect(await idsOf("type=resources.import")).toEqual([ids[2], ids[0]]);
    expect(await idsOf("status=succeeded")).toEqual([ids[1]]);
    expect(await idsOf("status=queued&type=resources.bulk_delete")).toEqual([ids[3]]);
    const created = list.data[0].created as number;
    expect(await idsOf(`created[gt]=${created}`)).toEqual([]);
    expect(await idsOf(`created[lte]=${created}`)).toHaveLength(4);
    const page1 = (await ctx.stack.api.get("/v1/jobs?limit=3", { key: own })).json as Json;
    expect(page1.has_more).toBe(true);
    expect(await idsOf(`limit=3&starting_after=${page1.data[2].id}`)).toEqual([ids[0]]);
    expect(await idsOf(`limit=2&ending_before=${ids[0]}`)).toEqual([ids[2], ids[1]]);

    const bad = await ctx.stack.api.get("/v1/jobs?status=done", { key: own });
    expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param: "status" });
    expect((await ctx.stack.api.get("/v1/jobs?type=x", { key: own })).json.error).toMatchObject({ code: "parameter_invalid", param: "type" });
    expect((await ctx.stack.api.get("/v1/jobs?limit=101", { key: own })).json.error.code).toBe("limit_invalid");
    expect((await ctx.stack.api.get(`/v1/jobs?starting_after=${RES_ID}`, { key: own })).json.error.param).toBe("starting_after");

    const one = await ctx.stack.api.get(`/v1/jobs/${ids[1]}`, { key: own });
    expect(one.status).toBe(200);
    expect(one.json).toEqual(list.data[2]);
    expect(one.json).toMatchObject({ status: "succeeded", finished_at: 1_800_000_000, result: { deleted: 1, errors: [] } });
    // Stored under the key's account: the tenant comes from the verified key, so no other account's lists could show them.
    expect(await ctx.db.collection<{ _id: string; account: string }>("jobs").distinct("account", { _id: { $in: ids } })).toEqual([mine.id]);
  });
});
