import { EVENT_TYPES } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import openapiTS from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENAPI_PATH } from "./openapi.js";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";
import type { Obj } from "./testutil/openapi.js";

// Issue 34 item 12: the API document's OpenAPI 3.1 `webhooks` section describes what every event type delivers (the
// event with its `data`) and the Standard Webhooks headers, so receivers generate their types from the same document
// as clients: openapi-typescript renders it here, Redocly lints it (openapi.lint.test.ts, the whole document), and
// real events of the stack match their type's schema.

let stack: Stack;
let key: string;
let doc: Obj;
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
  doc = (await stack.api.get(OPENAPI_PATH)).json;
});
afterAll(() => stack?.stop());

const resolve = (schema: Obj): Obj =>
  schema["$ref"] ? doc["components"][String(schema["$ref"]).split("/")[2]!][String(schema["$ref"]).split("/").at(-1)!] : schema;
const bodySchema = (type: string): Obj => resolve(doc["webhooks"][type]["post"]["requestBody"]["content"]["application/json"]["schema"]);

/**
 * The problems of `value` against `schema` (the keywords this document uses: $ref, type, const, enum, required,
 * properties, additionalProperties, pattern, oneOf).
 */
function problems(value: unknown, schema: Obj, at = "$"): string[] {
  const s = resolve(schema);
  if (s["oneOf"]) return (s["oneOf"] as Obj[]).some((option) => problems(value, option, at).length === 0) ? [] : [`${at}: matches no oneOf`];
  const found: string[] = [];
  const types = s["type"] === undefined ? [] : [s["type"]].flat();
  const typeOf = value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;
  if (types.length > 0 && !types.includes(typeOf) && !(typeOf === "integer" && types.includes("number"))) return [`${at}: ${typeOf}, not ${types.join("|")}`];
  if ("const" in s && value !== s["const"]) found.push(`${at}: not ${JSON.stringify(s["const"])}`);
  if (s["enum"] && !(s["enum"] as unknown[]).includes(value)) found.push(`${at}: not one of ${JSON.stringify(s["enum"])}`);
  if (typeof value === "string" && s["pattern"] && !new RegExp(String(s["pattern"])).test(value)) found.push(`${at}: does not match ${s["pattern"]}`);
  if (typeOf === "object") {
    const object = value as Obj;
    for (const name of (s["required"] ?? []) as string[]) if (!(name in object)) found.push(`${at}.${name}: missing`);
    const properties = (s["properties"] ?? {}) as Obj;
    for (const [name, item] of Object.entries(object)) {
      if (properties[name]) found.push(...problems(item, properties[name], `${at}.${name}`));
      else if (s["additionalProperties"] === false) found.push(`${at}.${name}: not allowed`);
      else if (typeof s["additionalProperties"] === "object") found.push(...problems(item, s["additionalProperties"], `${at}.${name}`));
    }
  }
  return found;
}

describe("the webhooks section", () => {
  it("has every event type, each with the Standard Webhooks headers and the event of that type as its body", () => {
    expect(Object.keys(doc["webhooks"]).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const post = doc["webhooks"][type]["post"];
      expect(post["parameters"].map((p: Obj) => resolve(p)).map((p: Obj) => [p["name"], p["in"], p["required"]])).toEqual([
        ["webhook-id", "header", true],
        ["webhook-timestamp", "header", true],
        ["webhook-signature", "header", true],
      ]);
      const body = bodySchema(type);
      expect(body["properties"]["type"]).toEqual({ type: "string", const: type });
      expect(body["required"]).toEqual(expect.arrayContaining(["id", "object", "type", "data", "sequence", "request"]));
      expect(resolve(body["properties"]["data"]["properties"]["object"])["properties"]["object"]).toBeDefined();
    }
    expect(bodySchema("resource.updated")["properties"]["data"]["required"]).toEqual(["object", "previous_attributes"]);
    expect(bodySchema("webhook_endpoint.disabled")["properties"]["data"]["properties"]["reason"]).toMatchObject({ enum: ["gone", "failing"] });
    // The disabled endpoint is shown without its secret.
    expect(bodySchema("webhook_endpoint.disabled")["properties"]["data"]["properties"]["object"]).toEqual({ $ref: "#/components/schemas/WebhookEndpoint" });
  });

  it("is rendered by openapi-typescript: a `webhooks` interface with each type's body and headers", async () => {
    const types = await openapiTS(doc as never);
    expect(types).toContain("export interface webhooks {");
    const webhooks = types.slice(types.indexOf("export interface webhooks {"));
    for (const type of EVENT_TYPES) expect(webhooks).toContain(`"${type}": {`);
    expect(types).toContain('"webhook-signature": components["parameters"]["WebhookSignature"];');
    expect(types).toContain("WebhookSignature: string;");
    expect(types).toContain('"application/json": components["schemas"]["ResourceUpdatedEvent"];');
    expect(types).toMatch(/ResourceUpdatedEvent: \{[\s\S]*?type: "resource\.updated";/);
  });

  it("describes the events the stack really sends: resource.created, resource.updated, resource.deleted, job.canceled match their schemas", async () => {
    const created = (await stack.api.post("/v1/resources", { key, form: { name: "typed", "metadata[plan]": "pro" } })).json;
    await stack.api.post(`/v1/resources/${created.id}`, { key, form: { status: "paused", "metadata[plan]": "" } });
    await stack.api.post(`/v1/resources/${created.id}`, { key, form: { name: "renamed" } });
    await stack.api.delete(`/v1/resources/${created.id}`, { key });
    const job = (await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: [{ name: "c" }] } } })).json;
    await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key });
    const events = await eventually(async () => {
      const listed = (await stack.api.get("/v1/events?limit=100", { key })).json.data as Obj[];
      expect(listed.map((e) => e["type"]).sort()).toEqual(["job.canceled", "resource.created", "resource.deleted", "resource.updated", "resource.updated"]);
      return listed;
    });
    for (const event of events)
      expect({ type: event["type"], problems: problems(event, bodySchema(String(event["type"]))) }).toEqual({ type: event["type"], problems: [] });
    // And a payload of another type does not pass as this one.
    expect(
      problems(
        events.find((e) => e["type"] === "resource.created"),
        bodySchema("resource.deleted"),
      ),
    ).not.toEqual([]);
  });
});
