import { expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";

const ctx = useStackWithSecretKey();

async function create(body: Record<string, unknown>) {
  const response = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: body });
  expect(response.status).toBe(201);
  return response.json as { id: string; created: number };
}

it("updates with 200 and the full resource; JSON and form give the same bytes", async () => {
  const a = await create({ name: "a", metadata: { keep: "1", drop: "2" } });
  const viaJson = await ctx.stack.api.post(`/v1/resources/${a.id}`, {
    key: ctx.key,
    json: { name: "renamed", status: "paused", metadata: { drop: "", added: 3 } },
  });
  const viaForm = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key, form: "name=renamed&status=paused&metadata[drop]=&metadata[added]=3" });
  expect([viaJson.status, viaForm.status]).toEqual([200, 200]);
  expect(viaForm.text).toBe(viaJson.text);
  expect(viaJson.text).toBe(
    `{"id":"${a.id}","object":"resource","name":"renamed","status":"paused","metadata":{"keep":"1","added":"3"},"created":${a.created}}`,
  );
});

it("leaves omitted fields unchanged; an empty body returns the resource as it is", async () => {
  const a = await create({ name: "same", status: "archived", metadata: { k: "v" } });
  const before = await ctx.stack.api.get(`/v1/resources/${a.id}`, { key: ctx.key });
  const emptyForm = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key, form: "" });
  const emptyJson = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key, json: {} });
  const noBody = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key });
  for (const response of [emptyForm, emptyJson, noBody]) {
    expect(response.status).toBe(200);
    expect(response.text).toBe(before.text);
  }
  const statusOnly = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key, form: { status: "active" } });
  expect(statusOnly.json).toMatchObject({ name: "same", status: "active", metadata: { k: "v" } });
});

it('clears all metadata with metadata="" in both encodings', async () => {
  const a = await create({ name: "m", metadata: { x: "1", y: "2" } });
  const b = await create({ name: "m", metadata: { x: "1", y: "2" } });
  const viaForm = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key, form: "metadata=" });
  const viaJson = await ctx.stack.api.post(`/v1/resources/${b.id}`, { key: ctx.key, json: { metadata: "" } });
  expect(viaForm.json.metadata).toEqual({});
  expect(viaJson.json.metadata).toEqual({});
  expect(viaForm.text.replace(a.id, "ID").replace(/"created":\d+/, "")).toBe(viaJson.text.replace(b.id, "ID").replace(/"created":\d+/, ""));
});

it("moves between every pair of statuses", async () => {
  const a = await create({ name: "s" });
  for (const status of ["paused", "archived", "active", "archived", "paused", "active"]) {
    const response = await ctx.stack.api.post(`/v1/resources/${a.id}`, { key: ctx.key, form: { status } });
    expect(response.json.status).toBe(status);
  }
});
