import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

let stack: Stack;
let key: string;
const ids: string[] = []; // oldest first
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
  for (let i = 0; i < 25; i++) {
    const response = await stack.api.post("/v1/resources", {
      key,
      form: { name: `r${i}`, status: i % 3 === 0 ? "paused" : "active", metadata: { i: String(i) } },
    });
    ids.push(response.json.id);
  }
});
afterAll(() => stack.stop());

it("lists newest first in the list envelope, 20 by default, full objects", async () => {
  const response = await stack.api.get("/v1/resources", { key });
  expect(response.status).toBe(200);
  expect(Object.keys(response.json)).toEqual(["object", "url", "has_more", "data"]);
  expect(response.json).toMatchObject({ object: "list", url: "/v1/resources", has_more: true });
  expect(response.json.data.map((r: { id: string }) => r.id)).toEqual([...ids].reverse().slice(0, 20));
  for (const item of response.json.data) expect(Object.keys(item)).toEqual(["id", "object", "name", "status", "metadata", "created"]);
});

it("walks every page with starting_after, each item once", async () => {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const response = await stack.api.get(`/v1/resources?limit=7${cursor ? `&starting_after=${cursor}` : ""}`, { key });
    expect(response.status).toBe(200);
    seen.push(...response.json.data.map((r: { id: string }) => r.id));
    if (!response.json.has_more) break;
    cursor = seen.at(-1);
  }
  expect(seen).toEqual([...ids].reverse());
});

it("pages backwards with ending_before", async () => {
  const newestFirst = [...ids].reverse();
  const response = await stack.api.get(`/v1/resources?limit=3&ending_before=${newestFirst[10]}`, { key });
  expect(response.status).toBe(200);
  expect(response.json.data.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(7, 10));
});

it("filters by status", async () => {
  const response = await stack.api.get("/v1/resources?status=paused&limit=100", { key });
  expect(response.json.data).toHaveLength(9);
  expect(response.json.has_more).toBe(false);
  expect(new Set(response.json.data.map((r: { status: string }) => r.status))).toEqual(new Set(["paused"]));
});

it("gives the same bytes for query-string and JSON-body parameters", async () => {
  const viaQuery = await stack.api.get(`/v1/resources?limit=5&status=active&starting_after=${ids[20]}`, { key });
  const viaJson = await stack.api.get("/v1/resources", { key, json: { limit: 5, status: "active", starting_after: ids[20] } });
  const viaForm = await stack.api.get("/v1/resources", { key, form: { limit: "5", status: "active", starting_after: ids[20] } });
  expect(viaQuery.status).toBe(200);
  expect(viaJson.text).toBe(viaQuery.text);
  expect(viaForm.text).toBe(viaQuery.text);
});

describe("filters: created, metadata, ids, several statuses, combined with each other and the cursors", () => {
  const newestFirst = () => [...ids].reverse();
  const listed = async (query: string) => {
    const response = await stack.api.get(`/v1/resources?${query}`, { key });
    expect(response.status, query).toBe(200);
    return (response.json.data as { id: string }[]).map((r) => r.id);
  };
  const idsQuery = (list: string[]) => list.map((id) => `ids[]=${id}`).join("&");

  it("metadata[key]=value: equality on one key", async () => {
    expect(await listed("metadata[i]=7")).toEqual([ids[7]]);
    expect(await listed("metadata[i]=7&status=paused")).toEqual([]);
    expect(await listed("metadata[i]=6&status=paused")).toEqual([ids[6]]);
    expect(await listed("metadata[i]=nope")).toEqual([]);
  });

  it("created[gt|gte|lt|lte]: a range of creation times", async () => {
    const first = (await stack.api.get(`/v1/resources/${ids[0]}`, { key })).json.created as number;
    expect(await listed(`created[lt]=${first}`)).toEqual([]);
    expect(await listed(`created[gte]=${first}&limit=100`)).toEqual(newestFirst());
    expect(await listed(`created[gt]=${first + 3600}`)).toEqual([]);
    expect(await listed(`created[lte]=${first + 3600}&status=paused&limit=100`)).toHaveLength(9);
  });

  it("ids[]: those of them that exist here, newest first; unknown and foreign ids are absent", async () => {
    const other = await withSecretKey(stack);
    const foreign = (await stack.api.post("/v1/resources", { key: other.key, json: { name: "not yours" } })).json.id as string;
    const unknown = `res_${"0".repeat(22)}`;
    expect(await listed(idsQuery([ids[3]!, foreign, ids[17]!, unknown, ids[3]!]))).toEqual([ids[17], ids[3]]);
    expect(await listed(`${idsQuery([ids[3]!, ids[4]!, ids[6]!])}&status=paused`)).toEqual([ids[6], ids[3]]);
    expect(await listed(`${idsQuery([ids[3]!, ids[4]!])}&metadata[i]=4`)).toEqual([ids[4]]);
    // The indexed form and one id alone are lists too.
    expect(await listed(`ids[0]=${ids[5]}&ids[1]=${ids[8]}`)).toEqual([ids[8], ids[5]]);
    expect(await listed(`ids=${ids[5]}`)).toEqual([ids[5]]);
  });

  it("status: one value or several", async () => {
    const all = await listed("limit=100");
    expect(await listed("status[]=paused&status[]=active&limit=100")).toEqual(all);
    expect(await listed("status=paused&status=archived&limit=100")).toEqual(await listed("status=paused&limit=100"));
    expect(await listed("status[0]=archived")).toEqual([]);
  });

  it("walks a filtered list with starting_after and back with ending_before, each match once", async () => {
    const chosen = ids.filter((_, i) => i % 2 === 0);
    const query = `${idsQuery(chosen)}&status=active`;
    const expected = newestFirst().filter((id) => chosen.includes(id) && ids.indexOf(id) % 3 !== 0);
    const seen: string[] = [];
    let cursor = "";
    for (let page = 0; page < 10; page++) {
      const response = await stack.api.get(`/v1/resources?${query}&limit=2${cursor}`, { key });
      seen.push(...response.json.data.map((r: { id: string }) => r.id));
      if (!response.json.has_more) break;
      cursor = `&starting_after=${seen.at(-1)}`;
    }
    expect(seen).toEqual(expected);
    expect(await listed(`${query}&limit=2&ending_before=${expected[4]}`)).toEqual(expected.slice(2, 4));
  });

  it("gives the same bytes for the filters in the query string, a JSON body and a form body", async () => {
    const first = (await stack.api.get(`/v1/resources/${ids[0]}`, { key })).json.created as number;
    const chosen = [ids[2]!, ids[4]!, ids[6]!];
    const viaQuery = await stack.api.get(`/v1/resources?${idsQuery(chosen)}&metadata[i]=6&created[gte]=${first}&status[]=paused&status[]=active`, { key });
    const json = { ids: chosen, metadata: { i: 6 }, created: { gte: first }, status: ["paused", "active"] };
    const viaJson = await stack.api.get("/v1/resources", { key, json });
    const viaForm = await stack.api.get("/v1/resources", {
      key,
      form: `${idsQuery(chosen)}&metadata[i]=6&created[gte]=${first}&status[0]=paused&status[1]=active`,
    });
    expect(viaQuery.json.data.map((r: { id: string }) => r.id)).toEqual([ids[6]]);
    expect(viaJson.text).toBe(viaQuery.text);
    expect(viaForm.text).toBe(viaQuery.text);
  });
});
