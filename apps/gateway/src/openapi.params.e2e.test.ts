import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENAPI_PATH } from "./openapi.js";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";
import { serializeQuery, type Obj } from "./testutil/openapi.js";

// Issue 21 item 7: a client generated from the API document must send what the gateway reads. Each query
// parameter of every list is serialized here by the OpenAPI 3.1 rules for its declared `style` and `explode`
// (as generators and schemathesis do), from its declared example, and sent to the real gateway over HTTPS.

describe("serializeQuery (the OpenAPI rules, as generated clients apply them)", () => {
  it("serializes each style", () => {
    expect(serializeQuery({ name: "created" }, { gte: 1 })).toBe("gte=1"); // the bug: form explode of an object
    expect(serializeQuery({ name: "created", style: "deepObject", explode: true }, { gte: 1, lt: 2 })).toBe("created%5Bgte%5D=1&created%5Blt%5D=2");
    expect(serializeQuery({ name: "types[]" }, ["a.b", "c"])).toBe("types%5B%5D=a.b&types%5B%5D=c");
    expect(serializeQuery({ name: "ids", explode: false }, ["a", "b"])).toBe("ids=a%2Cb");
    expect(serializeQuery({ name: "limit" }, 3)).toBe("limit=3");
    expect(serializeQuery({ name: "delivery_success" }, false)).toBe("delivery_success=false");
  });
});

describe("every list's query parameters, serialized as the document declares them, are read by the gateway", () => {
  let stack: Stack;
  let key: string;
  let doc: Obj;
  /** A real object for each list under one (`/v1/jobs/{id}/errors`), so a page is 200 rather than 404. */
  const pathIds: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startStack({ coreSettings: { secretKeyring: { primary: { id: "paramskey", bytes: Buffer.alloc(32, 5) } }, webhookAllowPrivate: true } });
    ({ key } = await withSecretKey(stack));
    doc = (await stack.api.get(OPENAPI_PATH)).json;
    const job = await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: [{ name: "a" }] } } });
    const endpoint = await stack.api.post("/v1/webhook_endpoints", { key, json: { url: "https://127.0.0.1:9/hook", enabled_events: ["resource.created"] } });
    expect([job.status, endpoint.status]).toEqual([201, 201]);
    pathIds["/v1/jobs/{id}/errors"] = job.json.id;
    pathIds["/v1/webhook_endpoints/{id}/attempts"] = endpoint.json.id;
  });
  afterAll(() => stack?.stop());

  /** Every GET of the document answering a list, with its query parameters. */
  function lists(): { path: string; parameters: Obj[] }[] {
    const found: { path: string; parameters: Obj[] }[] = [];
    for (const [path, methods] of Object.entries(doc["paths"] as Obj)) {
      const get = methods["get"] as Obj | undefined;
      const ref = get?.["responses"]?.["200"]?.["content"]?.["application/json"]?.["schema"]?.["$ref"] as string | undefined;
      const schema = ref ? doc["components"]["schemas"][ref.split("/").at(-1)!] : undefined;
      if (schema?.["properties"]?.["object"]?.["const"] !== "list") continue;
      found.push({ path, parameters: (get!["parameters"] as Obj[]).filter((p) => p["in"] === "query") });
    }
    return found;
  }

  it("finds the lists (events, jobs, resources, webhook endpoints, and the nested ones)", () => {
    expect(lists().map((l) => l.path)).toEqual(
      expect.arrayContaining([
        "/v1/events",
        "/v1/jobs",
        "/v1/resources",
        "/v1/webhook_endpoints",
        "/v1/jobs/{id}/errors",
        "/v1/webhook_endpoints/{id}/attempts",
      ]),
    );
  });

  /** Values for the parameters that have no example because another they exclude has one. */
  const EXCLUSIVE_EXAMPLES: Record<string, (parameters: Obj[]) => unknown> = {
    ending_before: (parameters) => example(parameters.find((p) => p["name"] === "starting_after")!),
    "types[]": () => ["resource.created", "resource.deleted"],
    object: () => `res_${"0".repeat(22)}`,
    sequence: () => ({ gt: 7 }),
    // The request logs' filters that combine only with `created` and the cursors (docs/request-logs.md).
    status: () => "4xx",
    api_key: () => `key_${"0".repeat(22)}`,
    idempotency_key: () => "order-42",
    error_code: () => "resource_missing",
  };
  const example = (parameter: Obj) => parameter["example"] ?? parameter["schema"]?.["example"];

  /** Parameters that only count together with another (their descriptions say so): sent with that one's example. */
  const TOGETHER: Record<string, string> = { "/v1/events sequence": "object" };

  it("answers 200 for each declared parameter sent alone (or with the one it needs), and the bracket notation ones are declared as such", async () => {
    const failures: string[] = [];
    let bracketed = 0;
    for (const { path, parameters } of lists()) {
      const base = path.replace("{id}", pathIds[path] ?? "");
      for (const parameter of parameters) {
        // A cursor exclusive with another has no example of its own (the examples together make one request): the other's.
        const value = example(parameter) ?? EXCLUSIVE_EXAMPLES[String(parameter["name"])]?.(parameters);
        expect(value, `${path} ${parameter["name"]}: an example to send`).toBeDefined();
        const needed = parameters.find((p) => p["name"] === TOGETHER[`${path} ${parameter["name"]}`]);
        const query = [
          serializeQuery(parameter, value),
          ...(needed ? [serializeQuery(needed, example(needed) ?? EXCLUSIVE_EXAMPLES[String(needed["name"])]?.(parameters))] : []),
        ].join("&");
        if (query.includes("%5B")) bracketed++;
        const response = await stack.api.get(`${base}?${query}`, { key });
        if (response.status !== 200)
          failures.push(`${path}?${decodeURIComponent(query)}: ${response.status} ${response.json?.error?.code} ${response.json?.error?.param ?? ""}`);
      }
    }
    expect(failures).toEqual([]);
    // created[...] of events and jobs, types[] of events at least.
    expect(bracketed).toBeGreaterThanOrEqual(3);
  });

  it("refuses with 400 each pair the document declares exclusive (x-mutually-exclusive-parameters), and accepts each alone", async () => {
    const failures: string[] = [];
    let pairs = 0;
    for (const { path, parameters } of lists()) {
      const declared = (doc["paths"][path]["get"]["x-mutually-exclusive-parameters"] ?? []) as string[][];
      const base = path.replace("{id}", pathIds[path] ?? "");
      for (const pair of declared) {
        pairs++;
        const sent = pair.map((name) => {
          const parameter = parameters.find((p) => p["name"] === name)!;
          return serializeQuery(parameter, example(parameter) ?? EXCLUSIVE_EXAMPLES[name]?.(parameters));
        });
        const both = await stack.api.get(`${base}?${sent.join("&")}`, { key });
        if (both.status !== 400) failures.push(`${path}?${decodeURIComponent(sent.join("&"))}: ${both.status}, not 400`);
      }
    }
    expect(failures).toEqual([]);
    // The cursors of every list, and type with types[] of events.
    // (A list in one page, such as an event's deliveries, has no cursors.)
    expect(pairs).toBeGreaterThanOrEqual(lists().filter((l) => l.parameters.some((p) => p["name"] === "starting_after")).length + 1);
  });

  it("the fixed declarations: created is a deepObject, types a bracketed list", () => {
    const parameter = (path: string, name: string) => (doc["paths"][path]["get"]["parameters"] as Obj[]).find((p) => p["name"] === name);
    for (const path of ["/v1/events", "/v1/jobs"]) expect(parameter(path, "created")).toMatchObject({ in: "query", style: "deepObject", explode: true });
    expect(parameter("/v1/events", "sequence")).toMatchObject({ in: "query", style: "deepObject", explode: true });
    expect(parameter("/v1/events", "types[]")).toMatchObject({ in: "query", style: "form", explode: true, schema: { type: "array" } });
  });
});
