import { expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";

const ctx = useStackWithSecretKey();

/** The parts of two create responses that may differ: id and creation time. */
const normalized = (text: string) => text.replace(/"id":"res_[0-9A-Za-z]+"/, '"id":"res_X"').replace(/"created":\d+/, '"created":0');

it("creates a resource with defaults: 201 and exactly the six fields", async () => {
  const before = Math.floor(Date.now() / 1000);
  const response = await ctx.stack.api.post("/v1/resources", { key: ctx.key, form: { name: "My first resource" } });
  expect(response.status).toBe(201);
  expect(Object.keys(response.json)).toEqual(["id", "object", "name", "status", "metadata", "created"]);
  expect(response.json).toMatchObject({ object: "resource", name: "My first resource", status: "active", metadata: {} });
  expect(response.json.id).toMatch(/^res_[0-9A-Za-z]+$/);
  expect(response.json.created).toBeGreaterThanOrEqual(before - 1);
  expect(response.json.created).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1);
});

it("gives the same bytes for the JSON and the form version of a create", async () => {
  const viaForm = await ctx.stack.api.post("/v1/resources", {
    key: ctx.key,
    form:
      "name=%20Spaces+kept%20&status=archived&metadata[plan]=pro&metadata[seats]=5" +
      "&metadata[__proto__]=data&metadata[a.b]=c&metadata[%24where]=x&metadata[0]=zero",
  });
  const viaJson = await ctx.stack.api.post("/v1/resources", {
    key: ctx.key,
    body: '{"name":" Spaces kept ","status":"archived","metadata":{"plan":"pro","seats":5,"__proto__":"data","a.b":"c","$where":"x","0":"zero"}}',
    headers: { "content-type": "application/json" },
  });
  expect([viaForm.status, viaJson.status]).toEqual([201, 201]);
  expect(normalized(viaJson.text)).toBe(normalized(viaForm.text));
  expect(normalized(viaJson.text)).toBe(
    '{"id":"res_X","object":"resource","name":" Spaces kept ' +
      '","status":"archived","metadata":{"0":"zero","plan":"pro","seats":"5","__proto__":"data","a.b":"c","$where":"x"},"created":0}',
  );
});

it("counts the name in code points: 200 emoji are a valid name", async () => {
  const name = "😀".repeat(200);
  const response = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name } });
  expect(response.status).toBe(201);
  expect(response.json.name).toBe(name);
});

it("takes JSON booleans as metadata values in their string form", async () => {
  const response = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "flags", metadata: { on: true, off: false } } });
  expect(response.status).toBe(201);
  expect(response.json.metadata).toEqual({ on: "true", off: "false" });
});

it("then retrieves exactly what it created", async () => {
  const created = await ctx.stack.api.post("/v1/resources", { key: ctx.key, json: { name: "kept", status: "paused", metadata: { k: "v" } } });
  const retrieved = await ctx.stack.api.get(`/v1/resources/${created.json.id}`, { key: ctx.key });
  expect(retrieved.status).toBe(200);
  expect(retrieved.text).toBe(created.text);
});
