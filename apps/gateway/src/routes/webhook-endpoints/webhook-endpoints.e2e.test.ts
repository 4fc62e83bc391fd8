import { Agent } from "node:https";
import { Writable } from "node:stream";
import { type Binary, MongoClient } from "mongodb";
import { pino } from "pino";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

/** Every line a logger writes, kept in memory (to prove secrets never reach a log). */
function captured() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  return { lines, logger: pino({ level: "trace" }, stream) };
}

const gatewayLogs = captured();
const coreLogs = captured();
// 32 bytes of 7s as the sealing key: a fixed test key, never a real one.
const SECRET_KEY = { primary: { id: "testkey1", bytes: Buffer.alloc(32, 7) } };
let stack: Stack;
let key: string;
let account: Awaited<ReturnType<typeof withSecretKey>>["account"];
beforeAll(async () => {
  stack = await startStack({
    logs: { gateway: gatewayLogs.logger, core: coreLogs.logger },
    coreSettings: { secretKeyring: SECRET_KEY, webhookAllowPrivate: false },
  });
  ({ key, account } = await withSecretKey(stack));
});
afterAll(() => stack?.stop());

const FIELDS = { url: "https://hooks.example.com/rms", enabled_events: ["resource.created", "job.failed"], description: "ops", metadata: { team: "a" } };
const OBJECT_KEYS = [
  "id",
  "object",
  "url",
  "enabled_events",
  "status",
  "description",
  "metadata",
  "livemode",
  "api_version",
  "created",
  "signature_scheme",
  "public_key",
];

describe("webhook endpoints over HTTPS", () => {
  it("creates (201, secret shown), retrieves and lists (no secret), in contract shape", async () => {
    const created = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS });
    expect(created.status).toBe(201);
    expect(Object.keys(created.json)).toEqual([...OBJECT_KEYS, "secret"]);
    expect(created.json).toMatchObject({ object: "webhook_endpoint", ...FIELDS, status: "enabled", livemode: false, api_version: "1.4" });
    expect(created.json.id).toMatch(/^we_[0-9A-Za-z]{22}$/);
    expect(created.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.json.secret.slice(6), "base64")).toHaveLength(32);

    const { secret: _secret, ...shown } = created.json;
    const read = await stack.api.get(`/v1/webhook_endpoints/${created.json.id}`, { key });
    expect(read.status).toBe(200);
    expect(read.json).toEqual(shown);
    expect(Object.keys(read.json)).toEqual(OBJECT_KEYS);
    const list = await stack.api.get("/v1/webhook_endpoints?limit=1", { key });
    expect(list.json).toMatchObject({ object: "list", url: "/v1/webhook_endpoints", data: [shown] });
  });

  it("gives byte-identical answers to the JSON and form versions of one update", async () => {
    const { json: we } = await stack.api.post("/v1/webhook_endpoints", { key, json: FIELDS });
    const change = { enabled_events: ["*"], status: "disabled", description: "", metadata: { team: "", env: "prod" } };
    const viaJson = await stack.api.post(`/v1/webhook_endpoints/${we.id}`, { key, json: change });
    const viaForm = await stack.api.post(`/v1/webhook_endpoints/${we.id}`, { key, form: change });
    expect(viaJson.status).toBe(200);
    expect(viaForm.text).toBe(viaJson.text);
    expect(viaJson.json).toMatchObject({ enabled_events: ["*"], status: "disabled", description: null, metadata: { env: "prod" } });
    // JSON null clears a description just as "" does.
    await stack.api.post(`/v1/webhook_endpoints/${we.id}`, { key, json: { description: "back" } });
    expect((await stack.api.post(`/v1/webhook_endpoints/${we.id}`, { key, json: { description: null } })).json.description).toBeNull();
  });

  it("replays a create under its Idempotency-Key byte for byte, whether the retry comes as JSON or as a form", async () => {
    const headers = { "Idempotency-Key": "we-create-1" };
    const first = await stack.api.post("/v1/webhook_endpoints", { key, json: FIELDS, headers });
    const again = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(first.text);
    const other = await stack.api.post("/v1/webhook_endpoints", { key, json: { ...FIELDS, description: "x" }, headers });
    expect(other.status).toBe(400);
    expect(other.json.error.code).toBe("idempotency_key_reused");
  });

  it("keeps the recorded answers of create and rotate encrypted: no secret in the idempotency records, replays still byte for byte", async () => {
    const { json: we, text } = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS, headers: { "Idempotency-Key": "we-sealed-1" } });
    const rotated = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, headers: { "Idempotency-Key": "we-sealed-2" } });
    const mongo = await new MongoClient(stack.mongoUri).connect();
    try {
      const records = await mongo.db(stack.databaseName).collection("idempotency_keys").find({}).toArray();
      const stored = records.map((r) => JSON.stringify(r) + Buffer.from((r["body"] as Binary | undefined)?.buffer ?? []).toString("latin1")).join("\n");
      expect(records.length).toBeGreaterThanOrEqual(2);
      expect(stored).not.toContain("whsec_");
      expect(stored).not.toContain(we.id);
    } finally {
      await mongo.close();
    }
    expect((await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS, headers: { "Idempotency-Key": "we-sealed-1" } })).text).toBe(text);
    const again = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, headers: { "Idempotency-Key": "we-sealed-2" } });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(rotated.text);
  });

  it("rotates the secret: a new one in the answer, the old one kept for its grace period", async () => {
    const { json: we } = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS });
    const rotated = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, form: { expires_in: "3600" } });
    expect(rotated.status).toBe(200);
    expect(Object.keys(rotated.json)).toEqual([...OBJECT_KEYS, "secret"]);
    expect(rotated.json.secret).toMatch(/^whsec_/);
    expect(rotated.json.secret).not.toBe(we.secret);
    for (const expires_in of ["604801", "-1", "soon"]) {
      const bad = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, form: { expires_in } });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param: "expires_in" });
    }
    const noBody = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key });
    expect(noBody.status).toBe(200);
  });

  it("deletes for good: 200 with the deletion result, then 404", async () => {
    const { json: we } = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS });
    const deleted = await stack.api.delete(`/v1/webhook_endpoints/${we.id}`, { key });
    expect(deleted.status).toBe(200);
    expect(deleted.text).toBe(JSON.stringify({ id: we.id, object: "webhook_endpoint", deleted: true }));
    for (const response of [
      await stack.api.delete(`/v1/webhook_endpoints/${we.id}`, { key }),
      await stack.api.get(`/v1/webhook_endpoints/${we.id}`, { key }),
      await stack.api.post(`/v1/webhook_endpoints/${we.id}`, { key, form: { description: "x" } }),
    ]) {
      expect(response.status).toBe(404);
      expect(response.json.error.code).toBe("resource_missing");
    }
  });

  it.each([
    ["a private address", { ...FIELDS, url: "https://10.0.0.1/hook" }, "url_invalid", "url"],
    ["plain http", { ...FIELDS, url: "http://hooks.example.com/" }, "url_invalid", "url"],
    ["no url", { enabled_events: ["*"] }, "parameter_missing", "url"],
    ["no enabled_events", { url: FIELDS.url }, "parameter_missing", "enabled_events"],
    ["an unknown event type", { ...FIELDS, enabled_events: ["resource.created", "resource.renamed"] }, "parameter_invalid", "enabled_events"],
    ["an unknown status", { ...FIELDS, status: "paused" }, "parameter_invalid", "status"],
    ["an unknown parameter", { ...FIELDS, secret: "whsec_mine" }, "parameter_unknown", "secret"],
  ])("refuses a create with %s (400)", async (_label, form, code, param) => {
    const response = await stack.api.post("/v1/webhook_endpoints", { key, form });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ type: "invalid_request_error", code, param });
  });

  it("answers the 17th create of an account and mode with 400 limit_exceeded", async () => {
    const { key: own } = await withSecretKey(stack);
    for (let i = 0; i < 16; i++) expect((await stack.api.post("/v1/webhook_endpoints", { key: own, form: FIELDS })).status).toBe(201);
    const over = await stack.api.post("/v1/webhook_endpoints", { key: own, form: FIELDS });
    expect(over.status).toBe(400);
    expect(over.json.error).toMatchObject({ type: "invalid_request_error", code: "limit_exceeded" });
  });
});

describe("signature_scheme v1a (Ed25519)", () => {
  const PUBLIC_KEY = /^whpk_[A-Za-z0-9+/]{43}=$/;

  it("creates from JSON and forms alike: public_key in the answer, no secret; retrieve and list show the public key", async () => {
    const viaJson = await stack.api.post("/v1/webhook_endpoints", { key, json: { ...FIELDS, signature_scheme: "v1a" } });
    const viaForm = await stack.api.post("/v1/webhook_endpoints", { key, form: { ...FIELDS, signature_scheme: "v1a" } });
    for (const created of [viaJson, viaForm]) {
      expect(created.status).toBe(201);
      expect(Object.keys(created.json)).toEqual(OBJECT_KEYS);
      expect(created.json).toMatchObject({ ...FIELDS, status: "enabled", signature_scheme: "v1a", public_key: expect.stringMatching(PUBLIC_KEY) });
      const read = await stack.api.get(`/v1/webhook_endpoints/${created.json.id}`, { key });
      expect(read.json).toEqual(created.json);
    }
    expect(viaForm.json.public_key).not.toBe(viaJson.json.public_key);
    const v1 = (await stack.api.post("/v1/webhook_endpoints", { key, json: FIELDS })).json;
    expect([v1.signature_scheme, v1.public_key]).toEqual(["v1", null]);

    // Sealed at rest like a whsec_ secret: nothing of the private key is stored in clear.
    const mongo = await new MongoClient(stack.mongoUri).connect();
    try {
      const doc = await mongo
        .db(stack.databaseName)
        .collection("webhook_endpoints")
        .findOne({ _id: viaJson.json.id } as never);
      expect(doc?.["secrets"]).toEqual([{ sealed: expect.stringMatching(/^enc1\./), expires_at: null, scheme: "v1a", public_key: viaJson.json.public_key }]);
      expect(JSON.stringify(doc)).not.toContain("whsk_");
    } finally {
      await mongo.close();
    }
  });

  it("rotates within v1a, to v1 (a secret again) and back; an unknown scheme is 400", async () => {
    const { json: we } = await stack.api.post("/v1/webhook_endpoints", { key, json: { ...FIELDS, signature_scheme: "v1a" } });
    const same = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, form: { expires_in: "60" } });
    expect(same.status).toBe(200);
    expect(Object.keys(same.json)).toEqual(OBJECT_KEYS);
    expect(same.json).toMatchObject({ signature_scheme: "v1a", public_key: expect.stringMatching(PUBLIC_KEY) });
    expect(same.json.public_key).not.toBe(we.public_key);
    const toV1 = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, json: { signature_scheme: "v1" } });
    expect(Object.keys(toV1.json)).toEqual([...OBJECT_KEYS, "secret"]);
    expect(toV1.json).toMatchObject({ signature_scheme: "v1", public_key: null, secret: expect.stringMatching(/^whsec_/) });
    const back = await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key, form: { signature_scheme: "v1a", expires_in: "0" } });
    expect(back.json).toMatchObject({ signature_scheme: "v1a", public_key: expect.stringMatching(PUBLIC_KEY) });
    expect(back.json).not.toHaveProperty("secret");
    expect((await stack.api.get(`/v1/webhook_endpoints/${we.id}`, { key })).json.public_key).toBe(back.json.public_key);

    for (const [path, body] of [
      ["/v1/webhook_endpoints", { ...FIELDS, signature_scheme: "v2" }],
      [`/v1/webhook_endpoints/${we.id}/rotate_secret`, { signature_scheme: "hmac" }],
    ] as const) {
      const refused = await stack.api.post(path, { key, json: body });
      expect(refused.status).toBe(400);
      expect(refused.json.error).toMatchObject({ code: "parameter_invalid", param: "signature_scheme" });
    }
  });
});

describe("who may", () => {
  it("404s an endpoint of another account or of the other mode", async () => {
    const { json: we } = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS });
    const { key: otherAccount } = await withSecretKey(stack);
    const { secret: liveKey } = await account.key("secret", "live");
    for (const other of [otherAccount, liveKey]) {
      expect((await stack.api.get(`/v1/webhook_endpoints/${we.id}`, { key: other })).status).toBe(404);
      expect((await stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key: other })).status).toBe(404);
      expect((await stack.api.delete(`/v1/webhook_endpoints/${we.id}`, { key: other })).status).toBe(404);
      expect((await stack.api.get("/v1/webhook_endpoints", { key: other })).json.data.map((w: Json) => w.id)).not.toContain(we.id);
    }
  });

  it("needs webhooks:write for every operation: restricted keys without it and publishable keys get 403", async () => {
    const { json: we } = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS });
    const { secret: restricted } = await account.key("restricted", "test", { scopes: ["resources:read", "resources:write", "events:read"] });
    const { secret: publishable } = await account.key("publishable", "test");
    const { secret: allowed } = await account.key("restricted", "test", { scopes: ["webhooks:write"] });
    const calls = (k: string) => [
      stack.api.get("/v1/webhook_endpoints", { key: k }),
      stack.api.post("/v1/webhook_endpoints", { key: k, form: FIELDS }),
      stack.api.get(`/v1/webhook_endpoints/${we.id}`, { key: k }),
      stack.api.post(`/v1/webhook_endpoints/${we.id}`, { key: k, form: { description: "by scope" } }),
      stack.api.post(`/v1/webhook_endpoints/${we.id}/rotate_secret`, { key: k }),
    ];
    for (const [k, code] of [
      [restricted, "insufficient_scope"],
      [publishable, "publishable_key_read_only"],
    ] as const) {
      for (const response of await Promise.all([...calls(k), stack.api.delete(`/v1/webhook_endpoints/${we.id}`, { key: k })])) {
        expect(response.status).toBe(403);
        expect(response.json.error.code).toBe(code);
      }
    }
    expect((await Promise.all(calls(allowed))).map((r) => r.status)).toEqual([200, 201, 200, 200, 200]);
    expect((await stack.api.delete(`/v1/webhook_endpoints/${we.id}`, { key: allowed })).status).toBe(200);
  });
});

it("never writes a secret into the gateway's or core's logs", async () => {
  const created = await stack.api.post("/v1/webhook_endpoints", { key, form: FIELDS });
  const rotated = await stack.api.post(`/v1/webhook_endpoints/${created.json.id}/rotate_secret`, { key });
  await stack.api.post(`/v1/webhook_endpoints/${created.json.id}/rotate_secret`, { key, form: { signature_scheme: "v1a" } });
  const logs = [...gatewayLogs.lines, ...coreLogs.lines].join("\n");
  expect(logs).toContain(created.json.id);
  expect(logs).not.toContain("whsec_");
  expect(logs).not.toContain("whsk_");
  for (const secret of [created.json.secret, rotated.json.secret]) expect(logs).not.toContain(secret.slice(6, 30));
});

it("works from the stripe-node SDK's own webhook endpoint methods (indexed form arrays, delete)", async () => {
  const stripe = new Stripe(key, {
    host: "127.0.0.1",
    port: stack.gateway.httpsPort,
    protocol: "https",
    httpAgent: new Agent({ ca: stack.gateway.certificate }),
  });
  // The SDK's types name Stripe's own event types; ours are passed as they are.
  const created = await stripe.webhookEndpoints.create({
    url: FIELDS.url,
    enabled_events: ["resource.created", "job.failed"] as never,
    metadata: { via: "sdk" },
  });
  expect(created).toMatchObject({ object: "webhook_endpoint", enabled_events: ["resource.created", "job.failed"], metadata: { via: "sdk" } });
  expect(created.secret).toMatch(/^whsec_/);
  const updated = await stripe.webhookEndpoints.update(created.id, { description: "from the sdk" });
  expect(updated.description).toBe("from the sdk");
  expect((await stripe.webhookEndpoints.retrieve(created.id)).secret).toBeUndefined();
  expect((await stripe.webhookEndpoints.list({ limit: 100 })).data.map((w) => w.id)).toContain(created.id);
  expect(await stripe.webhookEndpoints.del(created.id)).toEqual({ id: created.id, object: "webhook_endpoint", deleted: true });
});
