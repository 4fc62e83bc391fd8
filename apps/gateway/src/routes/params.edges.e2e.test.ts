import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../testutil/harness.js";
import { OPERATIONS } from "./index.js";
import type { Operation } from "../engine/operation.js";

// Edges of parameter reading that every operation shares (issue 34, items 2 and 3), through the real stack.
let stack: Stack;
let key: string;
beforeAll(async () => {
  // The key that seals webhook secrets: a webhook endpoint's create answers one.
  stack = await startStack({ coreSettings: { secretKeyring: { primary: { id: "edgeskey1", bytes: Buffer.alloc(32, 5) } } } });
  key = (await (await stack.newAccount()).key("secret")).secret;
});
afterAll(() => stack.stop());

/** The operation's path with each `:name` replaced by its example (a refusal of the query comes before any lookup). */
function pathOf(operation: Operation): string {
  return operation.path.replace(/:(\w+)/g, (_all, name: string) =>
    String(operation.parameters[name]?.example ?? operation.pathParameters[name]?.example ?? "x"),
  );
}

/** Every GET that takes query parameters: the lists, search, and whatever is added to the route list later. */
const lists = OPERATIONS.filter((operation) => operation.method === "GET" && operation.params.length > 0);

describe("an empty filter is refused by one rule on every list (parameter_invalid_empty, naming it)", () => {
  it("covers the lists of every kind", () => {
    const paths = lists.map((operation) => operation.path);
    for (const path of [
      "/v1/resources",
      "/v1/resources/search",
      "/v1/events",
      "/v1/jobs",
      "/v1/webhook_endpoints",
      "/v1/webhook_endpoints/:id/attempts",
      "/v1/jobs/:id/errors",
    ]) {
      expect(paths).toContain(path);
    }
  });

  it.each(lists.map((operation) => [`${operation.method} ${operation.path}`, operation] as const))(
    "%s: every parameter given empty",
    async (_name, operation) => {
      for (const name of operation.params) {
        const answer = await stack.api.get(`${pathOf(operation)}?${name}=`, { key });
        expect({ name, status: answer.status, error: answer.json.error }).toMatchObject({
          name,
          status: 400,
          error: { code: "parameter_invalid_empty", param: name },
        });
        expect(operation.errors).toContain("parameter_invalid_empty");
      }
    },
  );

  it("nested and listed filters too: created[gte]=, status[]=, metadata[plan]=, and the filters together (GET /v1/jobs?status=&type=)", async () => {
    const cases: [string, string][] = [
      ["/v1/resources?created[gte]=", "created[gte]"],
      ["/v1/resources?status[]=active&status[]=", "status[1]"],
      ["/v1/resources?metadata[plan]=", "metadata[plan]"],
      ["/v1/events?created[lt]=", "created[lt]"],
      ["/v1/jobs?status=&type=", "status"],
      ["/v1/jobs?type=", "type"],
      ["/v1/jobs?created[lte]=", "created[lte]"],
    ];
    for (const [path, param] of cases) {
      const answer = await stack.api.get(path, { key });
      expect({ path, status: answer.status, error: answer.json.error }).toMatchObject({ path, status: 400, error: { code: "parameter_invalid_empty", param } });
    }
  });

  it("a bulk job's filter follows the same rule, named under params[filter]", async () => {
    const answer = await stack.api.post("/v1/jobs", { key, form: "type=resources.bulk_delete&params[filter][created][gte]=" });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatchObject({ code: "parameter_invalid_empty", param: "params[filter][created][gte]" });
  });

  it("an absent filter is no filter: the same lists answer 200", async () => {
    for (const path of ["/v1/resources", "/v1/jobs", "/v1/events", "/v1/webhook_endpoints"]) expect((await stack.api.get(path, { key })).status).toBe(200);
  });

  it("a resend to an empty webhook_endpoint is parameter_invalid_empty, not missing", async () => {
    const answer = await stack.api.post(`/v1/events/evt_${"0".repeat(22)}/resend`, { key, form: "webhook_endpoint=" });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatchObject({ code: "parameter_invalid_empty", param: "webhook_endpoint" });
  });
});

describe("a parameter with an empty name is unknown, with param set to that name, in both encodings", () => {
  it.each([
    ["form, =x", { form: "name=n&=x" }, ""],
    ["form, = alone", { form: "name=n&=" }, ""],
    ["form, [a]=x (not read as a)", { form: "name=n&%5Bmetadata%5D=x" }, "[metadata]"],
    ["JSON, {'':null}", { json: { name: "n", "": null } }, ""],
    ["JSON, {'':'x'}", { json: { "": "x", name: "n" } }, ""],
  ] as const)("%s", async (_name, body, param) => {
    const answer = await stack.api.post("/v1/resources", { key, ...body });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatchObject({ type: "invalid_request_error", code: "parameter_unknown" });
    expect(answer.json.error.param).toBe(param);
  });

  it("in a query string too", async () => {
    const answer = await stack.api.get("/v1/resources?=x", { key });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatchObject({ code: "parameter_unknown", param: "" });
  });
});

// What schemathesis found (issue 41): the document says what these requests may be, and the gateway takes exactly that.
describe("the document's form encoding of a list, and its integers' bounds", () => {
  it("a list parameter given once in a form (name=a, OpenAPI's form encoding of a list of one) is a list of one; a JSON string is no list", async () => {
    const form = await stack.api.post("/v1/webhook_endpoints", { key, form: "url=https%3A%2F%2Fhooks.rms.invalid%2Fone&enabled_events=resource.created" });
    expect(form.status, form.text).toBe(201);
    expect(form.json.enabled_events).toEqual(["resource.created"]);
    const updated = await stack.api.post(`/v1/webhook_endpoints/${form.json.id}`, { key, form: "enabled_events=resource.deleted" });
    expect(updated.json.enabled_events).toEqual(["resource.deleted"]);
    const json = await stack.api.post("/v1/webhook_endpoints", { key, json: { url: "https://hooks.rms.invalid/two", enabled_events: "resource.created" } });
    expect(json.status).toBe(400);
    expect(json.json.error).toMatchObject({ code: "parameter_invalid", param: "enabled_events" });
    await stack.api.delete(`/v1/webhook_endpoints/${form.json.id}`, { key });
  });

  it("a JSON body of a form feed alone is no JSON (400), while an empty body is no parameters", async () => {
    const resource = await stack.api.post("/v1/resources", { key, json: { name: "fed" } });
    const fed = await stack.api.post(`/v1/resources/${resource.json.id}`, { key, body: "\f", headers: { "content-type": "application/json" } });
    expect(fed.status).toBe(400);
    expect(fed.json.error.code).toBe("parameter_invalid");
    const blank = await stack.api.post(`/v1/resources/${resource.json.id}`, { key, body: " \r\n\t", headers: { "content-type": "application/json" } });
    expect(blank.status).toBe(200);
  });

  it("an integer of 16 digits within the bound is taken (created[gte]=9007199254740991), and a created range states at least one bound", async () => {
    expect((await stack.api.get("/v1/resources?created[gte]=9007199254740991", { key })).status).toBe(200);
    expect((await stack.api.get("/v1/resources?created[lt]=7452944538778531", { key })).status).toBe(200);
    const list = OPERATIONS.find((o) => o.method === "GET" && o.path === "/v1/resources")!;
    expect(list.parameters["created"]!.schema["minProperties"]).toBe(1);
  });

  it(
    "a bulk update's metadata keys: what the document's key rule refuses (empty, " + "over 40 characters, a bracket) is refused, and what it takes is taken",
    async () => {
      const create = OPERATIONS.find((o) => o.method === "POST" && o.path === "/v1/jobs")!;
      type Schema = { properties?: Record<string, Schema>; oneOf?: Schema[]; anyOf?: Schema[]; propertyNames?: Record<string, unknown> };
      const shapes = (create.parameters["params"]!.schema as Schema).anyOf ?? [];
      const update = shapes.map((shape) => shape.properties?.["update"]).find((found) => found !== undefined);
      const rule = update?.properties?.["metadata"]?.oneOf?.[0]?.propertyNames ?? {};
      expect(rule).toMatchObject({ minLength: 1, maxLength: 40 });
      const takes = (name: string) => [...name].length >= 1 && [...name].length <= 40 && new RegExp(rule["pattern"] as string, "u").test(name);
      for (const name of ["", "k".repeat(40), "k".repeat(41), "a[b", "a]", "plan", "é".repeat(40)]) {
        const json = { type: "resources.bulk_update", validate_only: true, params: { filter: { status: "archived" }, update: { metadata: { [name]: "v" } } } };
        const answer = await stack.api.post("/v1/jobs", { key, json });
        expect([name, answer.status]).toEqual([name, takes(name) ? 200 : 400]);
      }
    },
  );

  it("every integer parameter states the largest value the gateway takes (2^53 - 1), and one past it is refused", async () => {
    const tooBig = "9007199254740992";
    const offenders: string[] = [];
    const integers = (schema: Record<string, unknown>, at: string): string[] => {
      if (schema["type"] === "integer") return schema["maximum"] === undefined ? [at] : [];
      const choices = [...((schema["oneOf"] ?? []) as Record<string, unknown>[]), ...((schema["anyOf"] ?? []) as Record<string, unknown>[])];
      const nested = [
        ...Object.entries((schema["properties"] ?? {}) as Record<string, Record<string, unknown>>),
        ...choices.map((s, i) => [`choice${i}`, s] as const),
      ];
      return nested.flatMap(([name, inner]) => integers(inner as Record<string, unknown>, `${at}.${name}`));
    };
    for (const operation of OPERATIONS)
      for (const [name, spec] of Object.entries(operation.parameters))
        offenders.push(...integers(spec.schema, `${operation.method} ${operation.path} ${name}`));
    expect(offenders).toEqual([]);
    for (const path of [`/v1/resources?created[gt]=${tooBig}`, `/v1/jobs/job_${"0".repeat(22)}/errors?starting_after=${tooBig}`]) {
      const answer = await stack.api.get(path, { key });
      expect([path, answer.status]).toEqual([path, 400]);
    }
  });
});
