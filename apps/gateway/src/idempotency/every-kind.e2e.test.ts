import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";

/**
 * The Idempotency-Key's two promises for every kind a POST creates (docs/idempotency-and-limits.md): the same keyed
 * create sent concurrently makes one object (the others get its answer or 409 in flight), and a replay answers the
 * first answer, byte for byte, whatever became of the object since: updated, canceled, deleted (the one rule).
 */
let stack: Stack;
let mongo: MongoClient;
// 32 bytes of 7s as the sealing key (an endpoint's answer under a key is recorded sealed): a fixed test key.
const SECRET_KEY = { primary: { id: "testkey1", bytes: Buffer.alloc(32, 7) } };
beforeAll(async () => {
  stack = await startStack({ coreSettings: { secretKeyring: SECRET_KEY } });
  mongo = await new MongoClient(stack.mongoUri).connect();
});
afterAll(async () => {
  await mongo?.close();
  await stack?.stop();
});

type Api = Stack["api"];
type Answer = Awaited<ReturnType<Api["post"]>>;

async function multipart(bytes: Buffer, filename: string): Promise<{ body: Buffer; type: string }> {
  const form = new FormData();
  form.append("purpose", "resources_import");
  form.append("file", new Blob([bytes], { type: "application/octet-stream" }), filename);
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), type: response.headers.get("content-type")! };
}

/** One kind: its keyed create, where its objects are stored, and how one is deleted (or ended) and then read. */
interface Kind {
  readonly name: string;
  readonly collection: string;
  create(key: string, idempotencyKey: string): Promise<Answer>;
  /** Deletes (or cancels) the object; what the API then shows of it, by status. */
  end(key: string, id: string): Promise<void>;
  retrieve(key: string, id: string): Promise<Answer>;
  /** After `end`, what the object's retrieve answers: 404 once deleted, 200 when it is only canceled. */
  readonly endedStatus: number;
}

const KINDS: Kind[] = [
  {
    name: "resource",
    collection: "resources",
    create: (key, k) => stack.api.post("/v1/resources", { key, form: "name=once&metadata[plan]=pro", headers: { "idempotency-key": k } }),
    end: async (key, id) => void expect((await stack.api.delete(`/v1/resources/${id}`, { key })).status).toBe(200),
    retrieve: (key, id) => stack.api.get(`/v1/resources/${id}`, { key }),
    endedStatus: 404,
  },
  {
    name: "webhook endpoint",
    collection: "webhook_endpoints",
    create: (key, k) =>
      stack.api.post("/v1/webhook_endpoints", {
        key,
        json: { url: "https://hooks.example.com/once", enabled_events: ["resource.created"] },
        headers: { "idempotency-key": k },
      }),
    end: async (key, id) => void expect((await stack.api.delete(`/v1/webhook_endpoints/${id}`, { key })).status).toBe(200),
    retrieve: (key, id) => stack.api.get(`/v1/webhook_endpoints/${id}`, { key }),
    endedStatus: 404,
  },
  {
    name: "file",
    collection: "files",
    create: async (key, k) => {
      const { body, type } = await multipart(Buffer.from('{"name":"once"}\n'), "once.jsonl");
      return stack.api.post("/v1/files", { key, body, headers: { "content-type": type, "idempotency-key": k } });
    },
    end: async (key, id) => void expect((await stack.api.delete(`/v1/files/${id}`, { key })).status).toBe(200),
    retrieve: (key, id) => stack.api.get(`/v1/files/${id}`, { key }),
    endedStatus: 404,
  },
  {
    name: "upload",
    collection: "uploads",
    create: (key, k) =>
      stack.api.post("/v1/uploads", {
        key,
        json: { purpose: "resources_import", filename: "once.jsonl", bytes: 10, type: "jsonl" },
        headers: { "idempotency-key": k },
      }),
    end: async (key, id) => void expect((await stack.api.post(`/v1/uploads/${id}/cancel`, { key })).status).toBe(200),
    retrieve: (key, id) => stack.api.get(`/v1/uploads/${id}`, { key }),
    endedStatus: 200,
  },
  {
    name: "job",
    collection: "jobs",
    create: (key, k) =>
      stack.api.post("/v1/jobs", {
        key,
        json: { type: "resources.bulk_delete", params: { filter: { status: "archived" } } },
        headers: { "idempotency-key": k },
      }),
    // Canceled while queued, or already finished by a worker (409): either way no longer what the first answer showed.
    end: async (key, id) => void expect([200, 409]).toContain((await stack.api.post(`/v1/jobs/${id}/cancel`, { key })).status),
    retrieve: (key, id) => stack.api.get(`/v1/jobs/${id}`, { key }),
    endedStatus: 200,
  },
];

describe.each(KINDS)("a keyed create: $name", (kind) => {
  it("sent 8 times at once makes one object: every success is the first answer byte for byte, any other 409 in flight", async () => {
    const { account, key } = await withSecretKey(stack);
    const answers = await Promise.all(Array.from({ length: 8 }, () => kind.create(key, "together")));
    const successes = answers.filter((a) => a.status === 200 || a.status === 201);
    const others = answers.filter((a) => !successes.includes(a));
    expect(successes.length).toBeGreaterThanOrEqual(1);
    for (const other of others) expect(other.status, other.text).toBe(409);
    for (const other of others) expect(other.json.error).toMatchObject({ type: "idempotency_error", code: "idempotency_key_in_use" });
    expect(new Set(successes.map((a) => a.text)).size).toBe(1);
    expect(await mongo.db(stack.databaseName).collection(kind.collection).countDocuments({ account: account.id })).toBe(1);
    // Once the first has answered, every repeat is its answer.
    const later = await kind.create(key, "together");
    expect(later.headers["idempotent-replayed"]).toBe("true");
    expect(later.text).toBe(successes[0]!.text);
    console.log(`${kind.name}: 8 concurrent creates under one key -> ${successes.length} answers (one object), ${others.length} x 409`);
  });

  it("replayed after its object was deleted (or canceled) answers the first answer again, byte for byte: the one rule", async () => {
    const { key } = await withSecretKey(stack);
    const first = await kind.create(key, "then-ended");
    expect(first.status).toBe(201);
    const id = first.json.id as string;
    await kind.end(key, id);
    expect((await kind.retrieve(key, id)).status).toBe(kind.endedStatus);
    const replay = await kind.create(key, "then-ended");
    expect(replay.status).toBe(first.status);
    expect(replay.text).toBe(first.text);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.headers["original-request"]).toBe(first.headers["request-id"]);
    // The replay made nothing: the object is still as `end` left it.
    expect((await kind.retrieve(key, id)).status).toBe(kind.endedStatus);
  });
});
