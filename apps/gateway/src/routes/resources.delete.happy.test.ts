import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";

let stack: Stack;
let key: string;
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
});
afterAll(() => stack.stop());

it("deletes with 200 and the deletion result; afterwards everything is 404", async () => {
  const created = await stack.api.post("/v1/resources", { key, json: { name: "doomed" } });
  const id = created.json.id as string;
  const deleted = await stack.api.delete(`/v1/resources/${id}`, { key });
  expect(deleted.status).toBe(200);
  expect(deleted.text).toBe(`{"id":"${id}","object":"resource","deleted":true}`);
  for (const response of [
    await stack.api.delete(`/v1/resources/${id}`, { key }),
    await stack.api.get(`/v1/resources/${id}`, { key }),
    await stack.api.post(`/v1/resources/${id}`, { key, form: { name: "back" } }),
  ]) {
    expect(response.status).toBe(404);
    expect(response.json.error.code).toBe("resource_missing");
  }
  const list = await stack.api.get("/v1/resources", { key });
  expect(list.json.data.map((r: { id: string }) => r.id)).not.toContain(id);
});

it("gives the same bytes whether the (empty) parameters come as form or JSON", async () => {
  const a = (await stack.api.post("/v1/resources", { key, json: { name: "a" } })).json.id as string;
  const b = (await stack.api.post("/v1/resources", { key, json: { name: "b" } })).json.id as string;
  const viaForm = await stack.api.delete(`/v1/resources/${a}`, { key, form: "" });
  const viaJson = await stack.api.delete(`/v1/resources/${b}`, { key, json: {} });
  expect(viaForm.text.replace(a, "ID")).toBe(viaJson.text.replace(b, "ID"));
});
