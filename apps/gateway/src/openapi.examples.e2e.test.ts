import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENAPI_PATH } from "./openapi.js";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";
import { serializeQuery, type Obj } from "./testutil/openapi.js";
import { openSse } from "./testutil/sse.js";

// Issue 34 item 4: the document's examples are valid requests. For every operation, one request is built from every
// example it declares (path parameters, all query parameters together, every body property together, as
// schemathesis's explicit-examples phase and a reader copying them do) and sent to the real gateway, in each body
// encoding. An answer may say the example's object does not exist here (404 `resource_missing`: the ids are examples)
// or that its state forbids it (409 `state_conflict`), never that the example itself is refused (any other 4xx).

const ALLOWED_REFUSALS = new Set(["404 resource_missing", "409 state_conflict"]);

let stack: Stack;
let key: string;
let doc: Obj;
beforeAll(async () => {
  stack = await startStack({ coreSettings: { secretKeyring: { primary: { id: "exampleskey", bytes: Buffer.alloc(32, 7) } }, webhookAllowPrivate: true } });
  ({ key } = await withSecretKey(stack));
  doc = (await stack.api.get(OPENAPI_PATH)).json;
});
afterAll(() => stack?.stop());

const resolve = (item: Obj): Obj => (item["$ref"] ? doc["components"]["parameters"][String(item["$ref"]).split("/").at(-1)!] : item);
const exampleOf = (item: Obj): unknown => item["example"] ?? item["schema"]?.["example"] ?? item["examples"]?.[0] ?? item["schema"]?.["examples"]?.[0];

/** A body as a form in Stripe bracket notation: `a[b]=1`, a list of values `a[]=1`, a list of objects `a[0][b]=1`. */
function formOf(value: Obj, prefix = ""): string[] {
  return Object.entries(value).flatMap(([key, item]) => {
    const name = prefix ? `${prefix}[${key}]` : key;
    if (Array.isArray(item)) {
      return item.flatMap((element, i) =>
        element !== null && typeof element === "object"
          ? formOf(element as Obj, `${name}[${i}]`)
          : [`${encodeURIComponent(`${name}[]`)}=${encodeURIComponent(String(element))}`],
      );
    }
    if (item !== null && typeof item === "object") return formOf(item as Obj, name);
    return [`${encodeURIComponent(name)}=${encodeURIComponent(String(item))}`];
  });
}

interface Built {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: { json: Obj } | { form: string };
  /** Answered as Server-Sent Events: a stream that stays open (its head is the answer). */
  readonly stream?: boolean;
}

/** The requests the examples make: one per operation, a POST once per body encoding. */
function requests(): Built[] {
  const built: Built[] = [];
  for (const [template, methods] of Object.entries(doc["paths"] as Obj)) {
    for (const [method, operation] of Object.entries(methods as Obj)) {
      const parameters = ((operation["parameters"] ?? []) as Obj[]).map(resolve);
      let path = template;
      const query: string[] = [];
      for (const parameter of parameters) {
        const value = exampleOf(parameter);
        if (value === undefined) continue;
        if (parameter["in"] === "path") path = path.replace(`{${parameter["name"]}}`, encodeURIComponent(String(value)));
        if (parameter["in"] === "query") query.push(serializeQuery(parameter, value));
      }
      const url = query.length > 0 ? `${path}?${query.join("&")}` : path;
      const name = `${method.toUpperCase()} ${template}`;
      const content = operation["requestBody"]?.["content"] as Obj | undefined;
      if (!content) {
        const stream = Boolean(operation["responses"]?.["200"]?.["content"]?.["text/event-stream"]);
        built.push({ name, method: method.toUpperCase(), path: url, ...(stream ? { stream } : {}) });
        continue;
      }
      // A streamed body (multipart upload, octet-stream part) has no JSON or form example: the files e2e tests send those.
      if (!content["application/json"]) continue;
      const properties = (content["application/json"]?.["schema"]?.["properties"] ?? {}) as Obj;
      const body = Object.fromEntries(
        Object.entries(properties)
          .map(([property, schema]) => [property, exampleOf({ schema })] as const)
          .filter(([, value]) => value !== undefined),
      );
      built.push({ name: `${name} (JSON)`, method: "POST", path: url, body: { json: body } });
      built.push({ name: `${name} (form)`, method: "POST", path: url, body: { form: formOf(body).join("&") } });
    }
  }
  return built;
}

/** A stream's answer: its status, and an error's body (a 200 stays open: it is closed once its head has come). */
async function streamHead(path: string) {
  const stream = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, path, { key });
  stream.close();
  return { status: stream.status, json: stream.status === 200 ? {} : { error: stream.error } };
}

describe("the OpenAPI document's examples", () => {
  it("cover every operation, and every parameter of each has one (but a cursor exclusive with another's)", () => {
    const names = requests().map((r) => r.name);
    expect(names.length).toBeGreaterThan(20);
    for (const name of ["GET /v1/resources", "GET /v1/resources/search", "POST /v1/jobs (form)", "POST /v1/webhook_endpoints/{id}/recover (JSON)"])
      expect(names).toContain(name);
  });

  it("make requests the server accepts: no 4xx caused by an example", async () => {
    const failures: string[] = [];
    for (const request of requests()) {
      const opts = { key, ...(request.body ?? {}) };
      const answer = request.stream
        ? await streamHead(request.path)
        : request.method === "GET"
          ? await stack.api.get(request.path, opts)
          : request.method === "DELETE"
            ? await stack.api.delete(request.path, opts)
            : await stack.api.post(request.path, opts);
      const refusal = `${answer.status} ${answer.json?.error?.code ?? ""}`;
      if (answer.status >= 400 && !ALLOWED_REFUSALS.has(refusal)) {
        failures.push(
          `${request.name}: ${refusal} ${answer.json?.error?.param ?? ""} ${answer.json?.error?.message ?? ""} <- ${request.path} ` +
            `${JSON.stringify(request.body ?? "")}`,
        );
      }
    }
    expect(failures).toEqual([]);
  });
});
