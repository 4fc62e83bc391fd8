import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { OPENAPI_PATH } from "../../openapi.js";
import { REQUEST_LOGS_COLLECTION } from "../../request-logs/store.js";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// CONTRACT.md section 12: secrets never reach a request log. Every operation of the OpenAPI document whose answer
// can hold a secret (a `secret` field anywhere in its success schema) is called, in JSON and in form encoding, and
// replayed under its Idempotency-Key; then no stored log holds any secret those answers carried, and the logs
// show the field as "[redacted]".

// biome-ignore lint/suspicious/noExplicitAny: the document and the answers as JSON; each assertion states the shape it expects.
type Obj = Record<string, any>;

let stack: Stack;
let key: string;
let doc: Obj;
beforeAll(async () => {
  stack = await startStack({ coreSettings: { secretKeyring: { primary: { id: "walkkey1", bytes: Buffer.alloc(32, 3) } }, webhookAllowPrivate: false } });
  ({ key } = await withSecretKey(stack));
  doc = (await stack.api.get(OPENAPI_PATH)).json;
});
afterAll(() => stack?.stop());

/** Whether a schema (through $ref, oneOf/anyOf/allOf, properties and items) has a property named `secret`. */
function holdsSecret(schema: Obj | undefined, seen = new Set<string>()): boolean {
  if (!schema || typeof schema !== "object") return false;
  if (typeof schema["$ref"] === "string") {
    const name = (schema["$ref"] as string).split("/").at(-1)!;
    if (seen.has(name)) return false;
    seen.add(name);
    return holdsSecret(doc["components"]["schemas"][name], seen);
  }
  if (schema["properties"] && "secret" in schema["properties"]) return true;
  const children = [
    ...(schema["oneOf"] ?? []),
    ...(schema["anyOf"] ?? []),
    ...(schema["allOf"] ?? []),
    ...Object.values(schema["properties"] ?? {}),
    schema["items"],
  ];
  return children.some((child: Obj | undefined) => holdsSecret(child, seen));
}

/** Every operation whose success answer can hold a secret. */
function secretOperations(): { method: string; path: string; operation: Obj }[] {
  const found: { method: string; path: string; operation: Obj }[] = [];
  for (const [path, methods] of Object.entries(doc["paths"] as Obj)) {
    for (const [method, operation] of Object.entries(methods as Obj)) {
      const success = Object.entries(operation["responses"] as Obj).filter(([status]) => status.startsWith("2"));
      if (success.some(([, answer]) => holdsSecret(answer["content"]?.["application/json"]?.["schema"]))) found.push({ method, path, operation });
    }
  }
  return found;
}

/** Every string in a JSON value that is a secret's text. */
function secretsIn(value: unknown): string[] {
  if (typeof value === "string") return /^wh(sec|sk)_/.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(secretsIn);
  if (value && typeof value === "object") return Object.values(value).flatMap(secretsIn);
  return [];
}

it("walks every operation answering a secret, in both encodings and as a replay, and no log holds a secret", async () => {
  const operations = secretOperations();
  expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
    expect.arrayContaining(["post /v1/webhook_endpoints", "post /v1/webhook_endpoints/{id}/rotate_secret"]),
  );
  const endpoint = await stack.api.post("/v1/webhook_endpoints", { key, json: { url: "https://hooks.example.com/walk", enabled_events: ["*"] } });
  expect(endpoint.status).toBe(201);
  const secrets = new Set<string>(secretsIn(endpoint.json));
  const requestIds: string[] = [endpoint.headers["request-id"]!];
  let n = 0;
  for (const { method, path, operation } of operations) {
    expect(method).toBe("post");
    const schema = operation["requestBody"]?.["content"]?.["application/json"]?.["schema"] as Obj | undefined;
    // The documented example of each required parameter, and the URL of a public host for an endpoint.
    const body: Obj = {};
    for (const name of (schema?.["required"] as string[] | undefined) ?? []) body[name] = schema!["properties"][name]["examples"][0];
    if ("url" in body) body["url"] = "https://hooks.example.com/walked";
    for (const encoding of ["json", "form"] as const) {
      const idempotencyKey = `walk-${n++}`;
      const send = () =>
        stack.api.post(path.replace("{id}", endpoint.json.id), {
          key,
          ...(encoding === "json" ? { json: body } : { form: body }),
          headers: { "idempotency-key": idempotencyKey },
        });
      const first = await send();
      const replay = await send();
      expect(first.status, `${path} ${encoding}: ${first.text}`).toBeLessThan(300);
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.text).toBe(first.text);
      for (const secret of secretsIn(first.json)) secrets.add(secret);
      requestIds.push(first.headers["request-id"]!, replay.headers["request-id"]!);
    }
  }
  expect(secrets.size).toBeGreaterThanOrEqual(1 + operations.length);

  // Every one of those requests is logged, with the secret field redacted.
  await eventually(
    async () => {
      const logs = (await stack.api.get("/v1/request_logs?limit=100", { key })).json.data as Obj[];
      const ours = logs.filter((l) => requestIds.includes(l["id"]));
      expect(ours).toHaveLength(requestIds.length);
      for (const log of ours) expect(log["response_body"]["secret"], log["id"]).toBe("[redacted]");
    },
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  // And nothing stored holds any of the secrets, or anything shaped like one.
  const mongo = new MongoClient(stack.mongoUri);
  try {
    const stored = JSON.stringify(await mongo.db(stack.databaseName).collection(REQUEST_LOGS_COLLECTION).find({}).toArray());
    for (const secret of secrets) expect(stored.includes(secret)).toBe(false);
    expect(stored).not.toMatch(/whsec_|whsk_/);
  } finally {
    await mongo.close();
  }
});
