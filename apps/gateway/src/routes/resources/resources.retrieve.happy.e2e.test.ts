import { expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";

const ctx = useStackWithSecretKey();

it("retrieves a resource by id with 200, the same bytes every time", async () => {
  const created = await ctx.stack.api.post("/v1/resources", { key: ctx.key, form: "name=R&metadata[__proto__]=x" });
  const path = `/v1/resources/${created.json.id}`;
  const first = await ctx.stack.api.get(path, { key: ctx.key });
  const second = await ctx.stack.api.get(path, { key: ctx.key });
  expect(first.status).toBe(200);
  expect(first.text).toBe(created.text);
  expect(second.text).toBe(first.text);
  expect(first.json.metadata).toEqual(JSON.parse('{"__proto__":"x"}'));
});

it("answers the same bytes whether (empty) parameters come as a query or a JSON body", async () => {
  const created = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "R2" } });
  const path = `/v1/resources/${created.json.id}`;
  const plain = await ctx.stack.api.get(path, { key: ctx.key });
  const withJsonBody = await ctx.stack.api.get(path, { key: ctx.key, json: {} });
  const withFormBody = await ctx.stack.api.get(path, { key: ctx.key, form: "" });
  expect(withJsonBody.text).toBe(plain.text);
  expect(withFormBody.text).toBe(plain.text);
});
