import { expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";

const ctx = useStackWithSecretKey();

it("deletes with 200 and the deletion result; afterwards everything is 404", async () => {
  const created = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "doomed" } });
  const id = created.json.id as string;
  const deleted = await ctx.stack.api.delete(`/v1/resources/${id}`, { key: ctx.key });
  expect(deleted.status).toBe(200);
  expect(deleted.text).toBe(`{"id":"${id}","object":"resource","deleted":true}`);
  for (const response of [
    await ctx.stack.api.delete(`/v1/resources/${id}`, { key: ctx.key }),
    await ctx.stack.api.get(`/v1/resources/${id}`, { key: ctx.key }),
    await ctx.stack.api.post(`/v1/resources/${id}`, { key: ctx.key, form: { name: "back" } }),
  ]) {
    expect(response.status).toBe(404);
    expect(response.json.error.code).toBe("resource_missing");
  }
  const list = await ctx.stack.api.get("/v1/resources", { key: ctx.key });
  expect(list.json.data.map((r: { id: string }) => r.id)).not.toContain(id);
});

it("gives the same bytes whether the (empty) parameters come as form or JSON", async () => {
  const a = (await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "a" } })).json.id as string;
  const b = (await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "b" } })).json.id as string;
  const viaForm = await ctx.stack.api.delete(`/v1/resources/${a}`, { key: ctx.key, form: "" });
  const viaJson = await ctx.stack.api.delete(`/v1/resources/${b}`, { key: ctx.key, json: {} });
  expect(viaForm.text.replace(a, "ID")).toBe(viaJson.text.replace(b, "ID"));
});
