import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS } from "./app.js";
import { errorCatalogue } from "./errors.js";
import { OPENAPI_PATH, openApiDocument } from "./openapi.js";
import { eventually } from "@rms/test-db/testkit";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";
import { openSse } from "./testutil/sse.js";

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const doc = openApiDocument(OPERATIONS) as Obj;
const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}");
const UNKEYED = new Set(["GET /v1/status", `GET ${OPENAPI_PATH}`]);

/** Resolves a local `$ref`. */
function resolve(node: Obj): Obj {
  if (typeof node["$ref"] !== "string") return node;
  return (node["$ref"] as string)
    .slice(2)
    .split("/")
    .reduce((at: Obj, part) => at[part], doc);
}

/** The parameter names a described operation accepts besides path parameters and headers. */
function documentedParams(operation: Obj): { query: string[]; body: Record<string, string[]>; path: string[] } {
  const parameters = (operation["parameters"] as Obj[]).map(resolve);
  const body: Record<string, string[]> = {};
  for (const [type, content] of Object.entries((operation["requestBody"]?.["content"] ?? {}) as Obj)) {
    body[type] = Object.keys(resolve(content["schema"])["properties"] ?? {});
  }
  return {
    // A list is declared under its bracketed name (`types[]`), as clients send it.
    query: parameters.filter((p) => p["in"] === "query").map((p) => String(p["name"]).replace(/\[\]$/, "")),
    path: parameters.filter((p) => p["in"] === "path").map((p) => p["name"]),
    body,
  };
}

describe("the OpenAPI document matches the gateway's operation table", () => {
  it("is OpenAPI 3.1 for API version 1.4 with bearer security", () => {
    expect(doc["openapi"]).toBe("3.1.0");
    expect(doc["info"]["version"]).toBe("1.4");
    expect(doc["components"]["securitySchemes"]["bearerAuth"]).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc["security"]).toEqual([{ bearerAuth: [] }]);
  });

  it("describes every operation with exactly its accepted parameters, in both request encodings", () => {
    for (const operation of OPERATIONS) {
      const described = doc["paths"][openApiPath(operation.path)]?.[operation.method.toLowerCase()] as Obj | undefined;
      expect(described, `${operation.method} ${operation.path}`).toBeDefined();
      const params = documentedParams(described!);
      expect(params.path).toEqual([...operation.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]));
      if (operation.method === "POST" && operation.stream) {
        // A body that streams (a file, a part): described in its own content type, its fields are the stream's.
        expect(Object.keys(params.body)).toEqual(Object.keys(operation.stream.requestBody?.content ?? {}));
        expect(params.query).toEqual([]);
        expect(described!["parameters"].map(resolve).map((p: Obj) => p["name"])).toContain("Idempotency-Key");
      } else if (operation.method === "POST") {
        expect(Object.keys(params.body).sort()).toEqual(["application/json", "application/x-www-form-urlencoded"]);
        for (const names of Object.values(params.body)) expect([...names].sort()).toEqual([...operation.params].sort());
        expect(params.query).toEqual([]);
        expect(described!["parameters"].map(resolve).map((p: Obj) => p["name"])).toContain("Idempotency-Key");
      } else {
        expect([...params.query].sort()).toEqual([...operation.params].sort());
        expect(described!["requestBody"]).toBeUndefined();
      }
      // An operation any key may call (its service decides who) names no scope.
      expect(described!["x-scope"]).toBe(operation.scope ?? undefined);
      expect(described!["security"]).toBeUndefined(); // the document-wide bearer requirement applies
    }
  });

  it("lets no query parameter be the empty string, which every GET refuses (parameter_invalid_empty)", () => {
    const takesEmpty = (schema: Obj): boolean => {
      const choices = (schema["oneOf"] ?? schema["anyOf"]) as Obj[] | undefined;
      if (choices) return choices.some((choice) => takesEmpty(resolve(choice)));
      if (schema["type"] === "array") return takesEmpty(resolve(schema["items"] ?? {}));
      if (schema["type"] === "object") return Object.values((schema["properties"] ?? {}) as Obj).some((p) => takesEmpty(resolve(p)));
      if (schema["type"] !== undefined && schema["type"] !== "string" && !(Array.isArray(schema["type"]) && schema["type"].includes("string"))) return false;
      if (Array.isArray(schema["enum"])) return schema["enum"].includes("");
      if (typeof schema["minLength"] === "number" && schema["minLength"] > 0) return false;
      return typeof schema["pattern"] !== "string" || new RegExp(schema["pattern"], "u").test("");
    };
    const offenders: string[] = [];
    for (const [path, methods] of Object.entries(doc["paths"] as Obj)) {
      for (const parameter of ((methods["get"]?.["parameters"] ?? []) as Obj[]).map(resolve)) {
        if (parameter["in"] === "query" && takesEmpty(resolve(parameter["schema"] ?? {}))) offenders.push(`GET ${path} ${parameter["name"]}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it("describes nothing the gateway does not serve", () => {
    const served = new Set([...OPERATIONS.map((o) => `${o.method} ${openApiPath(o.path)}`), ...UNKEYED]);
    const described = Object.entries(doc["paths"] as Obj).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(described.sort()).toEqual([...served].sort());
    for (const key of UNKEYED) {
      const [method, path] = key.split(" ") as [string, string];
      expect(doc["paths"][path][method.toLowerCase()]["security"]).toEqual([]);
    }
  });

  it("has every error code and type of the catalogue in the error schema, and a response for each status an operation can get", () => {
    const error = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"];
    const catalogue = errorCatalogue();
    expect([...error["code"]["enum"]].sort()).toEqual(catalogue.map((e) => e.code).sort());
    expect([...error["type"]["enum"]].sort()).toEqual([...new Set(catalogue.map((e) => e.type))].sort());
    // Statuses an authenticated operation can answer (405: another verb on its path, HEAD included).
    const statuses = new Set(catalogue.map((e) => String(e.status)));
    for (const operation of OPERATIONS) {
      const responses = doc["paths"][openApiPath(operation.path)][operation.method.toLowerCase()]["responses"] as Obj;
      for (const status of statuses) {
        expect(resolve(responses[status] ?? {})["content"]?.["application/json"]?.["schema"], `${operation.method} ${operation.path} ${status}`).toEqual({
          $ref: "#/components/schemas/Error",
        });
      }
    }
  });

  it("has no top-level `error` in any 2xx body (Stripe's SDKs read one as a failed request, whatever the status)", () => {
    /** The object shapes a schema can be at its top level: itself, or each of its variants. */
    const shapes = (schema: Obj): Obj[] => {
      const resolved = resolve(schema);
      const variants = [...(resolved["oneOf"] ?? []), ...(resolved["anyOf"] ?? []), ...(resolved["allOf"] ?? [])] as Obj[];
      return [resolved, ...variants.flatMap(shapes)];
    };
    const walked: string[] = [];
    const offending: string[] = [];
    for (const [path, methods] of Object.entries(doc["paths"] as Obj)) {
      for (const [method, operation] of Object.entries(methods as Obj)) {
        for (const [status, response] of Object.entries(operation["responses"] as Obj)) {
          if (!/^2\d\d$/.test(status)) continue;
          for (const [type, content] of Object.entries((resolve(response)["content"] ?? {}) as Obj)) {
            for (const shape of shapes(content["schema"])) {
              walked.push(`${method.toUpperCase()} ${path} ${status}`);
              if (Object.hasOwn(shape["properties"] ?? {}, "error")) offending.push(`${method.toUpperCase()} ${path} ${status} ${type}`);
            }
          }
        }
      }
    }
    expect(offending).toEqual([]);
    // Every operation's success was looked at, the job and attempt objects among them.
    for (const operation of OPERATIONS) expect(walked).toContain(`${operation.method} ${openApiPath(operation.path)} ${operation.success.status}`);
    expect(resolve({ $ref: "#/components/schemas/Job" })["properties"]).toHaveProperty("failure_code");
    expect(resolve({ $ref: "#/components/schemas/WebhookAttempt" })["properties"]).toHaveProperty("failure_code");
  });
});

describe("the gateway accepts exactly the documented parameters", () => {
  let gw: Stack;
  let key: string;
  /** An event and a request of the key's account: the streams' `starting_after` must name one that exists. */
  let eventId: string;
  let requestId: string;
  beforeAll(async () => {
    gw = await startStack();
    ({ key } = await withSecretKey(gw));
    const created = await gw.api.post("/v1/resources", { key, form: { name: "cursor" } });
    requestId = created.headers["request-id"]!;
    eventId = await eventually(async () => {
      const [event] = (await gw.api.get("/v1/events", { key })).json.data;
      expect(event).toBeDefined();
      return event.id as string;
    });
    await eventually(async () => expect((await gw.api.get(`/v1/request_logs/${requestId}`, { key })).status).toBe(200));
  });
  afterAll(() => gw?.stop());

  it("serves the document without a key", async () => {
    const response = await gw.api.get(OPENAPI_PATH);
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(response.json).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  // Bodies that stream (multipart files, raw parts) are checked by routes/files/files.e2e.test.ts.
  it.each(OPERATIONS.filter((o) => !o.stream?.requestBody).map((o) => [`${o.method} ${o.path}`, o] as const))(
    "%s: each documented parameter is known (its example accepted), anything else is parameter_unknown",
    async (_label, operation) => {
      const path = operation.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => String(operation.pathParameters[name]?.example));
      const send = (params: Record<string, unknown>) => {
        const form = new URLSearchParams();
        for (const [name, value] of Object.entries(params)) {
          if (typeof value === "object" && value) for (const [k, v] of Object.entries(value)) form.append(`${name}[${k}]`, String(v));
          else form.append(name, String(value));
        }
        if (operation.stream?.successContent?.content["text/event-stream"]) return streamAnswer(`${path}?${form.toString()}`);
        return operation.method === "POST"
          ? gw.api.post(path, { key, form: form.toString() })
          : gw.api.send(operation.method, `${path}?${form.toString()}`, { key });
      };
      // A stream answers 200 and stays open: its head is the answer (an error's body is whole).
      const streamAnswer = async (url: string) => {
        const stream = await openSse(gw.gateway.httpsPort, gw.gateway.certificate, url, { key });
        stream.close();
        return { status: stream.status, json: stream.status === 200 ? {} : { error: stream.error } };
      };
      const cursors: Record<string, string> = { "/v1/events/stream": eventId, "/v1/request_logs/stream": requestId };
      // A parameter exclusive with another shows no example (the examples together make one valid request): one here.
      const exclusive: Record<string, unknown> = {
        ending_before: operation.parameters["starting_after"]?.example,
        types: ["resource.created"],
        object: `res_${"0".repeat(22)}`,
        sequence: { gt: 7 },
        // The request logs' filters that combine only with `created` and the cursors (docs/request-logs.md).
        status: "4xx",
        api_key: `key_${"0".repeat(22)}`,
        idempotency_key: "order-42",
        error_code: "resource_missing",
      };
      for (const name of operation.params) {
        const cursor = name === "starting_after" ? cursors[operation.path] : undefined;
        const response = await send({ [name]: cursor ?? operation.parameters[name]!.example ?? exclusive[name] });
        expect(response.json.error?.code, `${name}`).not.toBe("parameter_unknown");
        // The described example is a valid value: whatever else is answered, it is not refused.
        expect(response.json.error?.param, `${name}`).not.toBe(name);
      }
      const unknown = await send({ not_a_parameter: "x" });
      expect(unknown.status).toBe(400);
      expect(unknown.json.error).toMatchObject({ code: "parameter_unknown", param: "not_a_parameter" });
    },
  );
});
