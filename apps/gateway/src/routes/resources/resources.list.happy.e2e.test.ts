import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

let stack: Stack;
let key: string;
const ids: string[] = []; // oldest first
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
  for (let i = 0; i < 25; i++) {
    const response = await stack.api.post("/v1/resources", { key, form: { name: `r${i}`, status: i % 3 === 0 ? "paused" : "active", metadata: { i: String(i) } } });
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
