import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";

let stack: Stack;
let key: string;
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
});
afterAll(() => stack.stop());

it("retrieves a resource by id with 200, the same bytes every time", async () => {
  const created = await stack.api.post("/v1/resources", { key, form: "name=R&metadata[__proto__]=x" });
  const path = `/v1/resources/${created.json.id}`;
  const first = await stack.api.get(path, { key });
  const second = await stack.api.get(path, { key });
  expect(first.status).toBe(200);
  expect(first.text).toBe(created.text);
  expect(second.text).toBe(first.text);
  expect(first.json.metadata).toEqual(JSON.parse('{"__proto__":"x"}'));
});

it("answers the same bytes whether (empty) parameters come as a query or a JSON body", async () => {
  const created = await stack.api.post("/v1/resources", { key, json: { name: "R2" } });
  const path = `/v1/resources/${created.json.id}`;
  const plain = await stack.api.get(path, { key });
  const withJsonBody = await stack.api.get(path, { key, json: {} });
  const withFormBody = await stack.api.get(path, { key, form: "" });
  expect(withJsonBody.text).toBe(plain.text);
  expect(withFormBody.text).toBe(plain.text);
});
