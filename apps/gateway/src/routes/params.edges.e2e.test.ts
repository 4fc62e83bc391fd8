import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../testutil/harness.js";
import { OPERATIONS } from "./index.js";
import type { Operation } from "../engine/operation.js";

// Edges of parameter reading that every operation shares (issue 34, items 2 and 3), through the real stack.
let stack: Stack;
let key: string;
beforeAll(async () => {
  stack = await startStack();
  key = (await (await stack.newAccount()).key("secret")).secret;
});
afterAll(() => stack.stop());

/** The operation's path with each `:name` replaced by its example (a refusal of the query comes before any lookup). */
function pathOf(operation: Operation): string {
  return operation.path.replace(/:(\w+)/g, (_all, name: string) => String(operation.parameters[name]?.example ?? operation.pathParameters[name]?.example ?? "x"));
}

/** Every GET that takes query parameters: the lists, search, and whatever is added to the route list later. */
const lists = OPERATIONS.filter((operation) => operation.method === "GET" && operation.params.length > 0);

describe("an empty filter is refused by one rule on every list (parameter_invalid_empty, naming it)", () => {
  it("covers the lists of every kind", () => {
    const paths = lists.map((operation) => operation.path);
    for (const path of ["/v1/resources", "/v1/resources/search", "/v1/events", "/v1/jobs", "/v1/webhook_endpoints", "/v1/webhook_endpoints/:id/attempts", "/v1/jobs/:id/errors"]) {
      expect(paths).toContain(path);
    }
  });

  it.each(lists.map((operation) => [`${operation.method} ${operation.path}`, operation] as const))("%s: every parameter given empty", async (_name, operation) => {
    for (const name of operation.params) {
      const answer = await stack.api.get(`${pathOf(operation)}?${name}=`, { key });
      expect({ name, status: answer.status, error: answer.json.error }).toMatchObject({ name, status: 400, error: { code: "parameter_invalid_empty", param: name } });
      expect(operation.errors).toContain("parameter_invalid_empty");
    }
  });

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
