import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

let stack: Stack;
let key: string;
let account: Awaited<ReturnType<typeof withSecretKey>>["account"];
let resourceId: string;
let created: Json;
beforeAll(async () => {
  stack = await startStack();
  ({ key, account } = await withSecretKey(stack));
  created = (await stack.api.post("/v1/resources", { key, form: { name: "first", metadata: { team: "a" } }, headers: { "Idempotency-Key": "events-story-1" } }))
    .json;
  resourceId = created.id;
  expect((await stack.api.post(`/v1/resources/${resourceId}`, { key, form: { name: "second" } })).status).toBe(200);
  expect((await stack.api.send("DELETE", `/v1/resources/${resourceId}`, { key })).status).toBe(200);
});
afterAll(() => stack?.stop());

/** The account's events once the relay has moved all three (bounded wait). */
const threeEvents = () =>
  eventually(async () => {
    const response = await stack.api.get("/v1/events", { key });
    expect(response.status).toBe(200);
    expect(response.json.data).toHaveLength(3);
    return response.json as Json;
  });

it("shows the create, update and delete of a resource as three events, newest first, in the list envelope", async () => {
  const list = await threeEvents();
  expect(Object.keys(list)).toEqual(["object", "url", "has_more", "data"]);
  expect(list).toMatchObject({ object: "list", url: "/v1/events", has_more: false });
  const [deleted, updated, first] = list.data as Json[];
  expect(list.data.map((e: Json) => e.type)).toEqual(["resource.deleted", "resource.updated", "resource.created"]);
  expect(list.data.map((e: Json) => e.sequence)).toEqual([2, 1, 0]);
  for (const event of list.data) {
    expect(Object.keys(event)).toEqual(["id", "object", "type", "created", "livemode", "api_version", "sequence", "pending_webhooks", "data", "request"]);
    expect(event).toMatchObject({ object: "event", livemode: false, api_version: "1.4", pending_webhooks: 0 });
    expect(event.id).toMatch(/^evt_[0-9A-Za-z]{22}$/);
  }
  // data.object is the resource as the public API shows it.
  expect(first!.data).toEqual({ object: created });
  expect(first!.request).toMatchObject({ idempotency_key: "events-story-1" });
  expect(first!.request.id).toMatch(/^req_/);
  expect(updated!.data.previous_attributes).toEqual({ name: "first" });
  expect(updated!.data.object).toEqual({ ...created, name: "second" });
  expect(updated!.request.idempotency_key).toBeNull();
  // A deleted resource's event keeps the object as it was.
  expect(deleted!.data).toEqual({ object: { ...created, name: "second" } });

  const one = await stack.api.get(`/v1/events/${updated!.id}`, { key });
  expect(one.status).toBe(200);
  expect(one.json).toEqual(updated);
});

it("filters by type, type prefix, types and created, from the query string, a form body and a JSON body alike", async () => {
  const all = (await threeEvents()).data as Json[];
  const types = async (query: string) => ((await stack.api.get(`/v1/events?${query}`, { key })).json.data as Json[]).map((e) => e.type);
  expect(await types("type=resource.updated")).toEqual(["resource.updated"]);
  expect(await types("type=resource.*")).toEqual(["resource.deleted", "resource.updated", "resource.created"]);
  expect(await types("type=job.*")).toEqual([]);
  expect(await types("types[]=resource.created&types[]=resource.deleted")).toEqual(["resource.deleted", "resource.created"]);
  const newest = all[0]!.created as number;
  expect(await types(`created[gt]=${newest}`)).toEqual([]);
  expect(await types(`created[lte]=${newest}&created[gte]=${all[2]!.created}`)).toHaveLength(3);

  const viaQuery = await stack.api.get(`/v1/events?limit=1&types[]=resource.created&types[]=resource.updated&created[gte]=${all[2]!.created}`, { key });
  const viaForm = await stack.api.get("/v1/events", {
    key,
    form: { limit: "1", types: { 0: "resource.created", 1: "resource.updated" }, created: { gte: String(all[2]!.created) } },
  });
  const viaJson = await stack.api.get("/v1/events", {
    key,
    json: { limit: 1, types: ["resource.created", "resource.updated"], created: { gte: all[2]!.created } },
  });
  expect(viaQuery.json.data.map((e: Json) => e.type)).toEqual(["resource.updated"]);
  expect(viaQuery.json.has_more).toBe(true);
  expect(viaForm.text).toBe(viaQuery.text);
  expect(viaJson.text).toBe(viaQuery.text);

  const after = await stack.api.get(`/v1/events?limit=2&starting_after=${all[0]!.id}`, { key });
  expect(after.json.data.map((e: Json) => e.id)).toEqual([all[1]!.id, all[2]!.id]);
  const before = await stack.api.get(`/v1/events?ending_before=${all[2]!.id}`, { key });
  expect(before.json.data.map((e: Json) => e.id)).toEqual([all[0]!.id, all[1]!.id]);
});

it("refuses type with types, more than 20 types, bad bounds, and unknown or foreign event ids", async () => {
  const bad = async (query: string) => (await stack.api.get(`/v1/events?${query}`, { key })).json.error;
  expect(await bad("type=resource.created&types[]=resource.updated")).toMatchObject({ code: "parameter_invalid", param: "types" });
  expect(await bad(Array.from({ length: 21 }, (_, i) => `types[]=t${i}`).join("&"))).toMatchObject({ code: "parameter_invalid", param: "types" });
  expect(await bad("created[after]=1")).toMatchObject({ code: "parameter_unknown", param: "created[after]" });
  expect(await bad("created[gt]=yesterday")).toMatchObject({ code: "parameter_invalid", param: "created[gt]" });
  expect(await bad("created=5")).toMatchObject({ code: "parameter_invalid", param: "created" });

  const missing = await stack.api.get("/v1/events/evt_0000000000000000000000", { key });
  expect(missing.status).toBe(404);
  expect(missing.json.error).toMatchObject({ code: "resource_missing", param: "id" });
  const [event] = (await threeEvents()).data as Json[];
  const other = await withSecretKey(stack);
  expect((await stack.api.get(`/v1/events/${event!.id}`, { key: other.key })).status).toBe(404);
  expect((await stack.api.get("/v1/events", { key: other.key })).json.data).toEqual([]);
});

it("needs events:read: secret keys and restricted keys given it read; publishable keys and restricted keys without it are refused", async () => {
  await threeEvents();
  const publishable = await account.key("publishable");
  const refused = await stack.api.get("/v1/events", { key: publishable.secret });
  expect(refused.status).toBe(403);
  expect(refused.json.error.code).toBe("publishable_key_read_only");
  expect((await stack.api.get("/v1/events/evt_0000000000000000000000", { key: publishable.secret })).status).toBe(403);

  const withScope = await account.key("restricted", "test", { scopes: ["events:read"] });
  const allowed = await stack.api.get("/v1/events", { key: withScope.secret });
  expect(allowed.status).toBe(200);
  expect(allowed.json.data).toHaveLength(3);
  const without = await account.key("restricted", "test", { scopes: ["resources:read"] });
  const denied = await stack.api.get("/v1/events", { key: without.secret });
  expect(denied.status).toBe(403);
  expect(denied.json.error.code).toBe("insufficient_scope");
});

it("delivery_success=true|false reaches core's filter (no endpoint waits for these events); any other value is 400", async () => {
  await threeEvents();
  expect((await stack.api.get("/v1/events?delivery_success=true", { key })).json.data).toHaveLength(3);
  expect((await stack.api.get("/v1/events?delivery_success=false", { key })).json.data).toHaveLength(0);
  const bad = await stack.api.get("/v1/events?delivery_success=maybe", { key });
  expect(bad.status).toBe(400);
  expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param: "delivery_success" });
});

it("gap repair: a receiver that applied sequence 7 of an object and then received 10 gets exactly the events it missed, in every encoding", async () => {
  const { json: resource } = await stack.api.post("/v1/resources", { key, form: { name: "v0" } });
  for (let i = 1; i <= 10; i++) expect((await stack.api.post(`/v1/resources/${resource.id}`, { key, form: { name: `v${i}` } })).status).toBe(200);
  const sequences = (page: Json) => (page.data as Json[]).map((e) => e.sequence);
  const all = await eventually(async () => {
    const page = (await stack.api.get(`/v1/events?object=${resource.id}&limit=100`, { key })).json;
    expect(sequences(page)).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    return page.data as Json[];
  });
  expect(all.every((e) => e.data.object.id === resource.id)).toBe(true);

  // Everything after 7 (10 included, which it has), and exactly the missed ones with an upper bound.
  const afterSeven = await stack.api.get(`/v1/events?object=${resource.id}&sequence[gt]=7`, { key });
  expect(afterSeven.status).toBe(200);
  expect(sequences(afterSeven.json)).toEqual([10, 9, 8]);
  const missed = await stack.api.get(`/v1/events?object=${resource.id}&sequence[gt]=7&sequence[lt]=10`, { key });
  expect(sequences(missed.json)).toEqual([9, 8]);
  expect(missed.json.data).toEqual(all.slice(1, 3));
  const viaForm = await stack.api.get("/v1/events", { key, form: { object: resource.id, sequence: { gt: "7", lt: "10" } } });
  const viaJson = await stack.api.get("/v1/events", { key, json: { object: resource.id, sequence: { gt: 7, lt: 10 } } });
  expect(viaForm.text).toBe(missed.text);
  expect(viaJson.text).toBe(missed.text);

  // A long gap pages by cursors of that object.
  const first = (await stack.api.get(`/v1/events?object=${resource.id}&sequence[gt]=2&limit=3`, { key })).json;
  expect([sequences(first), first.has_more]).toEqual([[10, 9, 8], true]);
  const next = (await stack.api.get(`/v1/events?object=${resource.id}&sequence[gt]=2&limit=3&starting_after=${first.data[2].id}`, { key })).json;
  expect([sequences(next), next.has_more]).toEqual([[7, 6, 5], true]);

  // Other accounts see nothing of it.
  const other = await withSecretKey(stack);
  expect((await stack.api.get(`/v1/events?object=${resource.id}`, { key: other.key })).json.data).toEqual([]);
});

it("refuses sequence without object, a malformed object, object with filters no index serves beside it, and a cursor of another object", async () => {
  const bad = async (query: string) => {
    const response = await stack.api.get(`/v1/events?${query}`, { key });
    expect(response.status).toBe(400);
    return response.json.error;
  };
  expect(await bad("sequence[gt]=7")).toMatchObject({ code: "parameter_missing", param: "object" });
  expect(await bad("object=res_1")).toMatchObject({ code: "parameter_invalid", param: "object" });
  expect(await bad(`object=${resourceId}&type=resource.updated`)).toMatchObject({ code: "parameter_invalid", param: "type" });
  expect(await bad(`object=${resourceId}&created[gte]=1`)).toMatchObject({ code: "parameter_invalid", param: "created" });
  expect(await bad(`object=${resourceId}&delivery_success=true`)).toMatchObject({ code: "parameter_invalid", param: "delivery_success" });
  expect(await bad(`object=${resourceId}&sequence[after]=1`)).toMatchObject({ code: "parameter_unknown", param: "sequence[after]" });
  const [event] = (await stack.api.get(`/v1/events?object=${resourceId}`, { key })).json.data as Json[];
  expect(await bad(`object=res_0000000000000000000000&starting_after=${event!.id}`)).toMatchObject({ code: "parameter_invalid", param: "starting_after" });
});
