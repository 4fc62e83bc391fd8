import { status as GrpcStatus } from "@grpc/grpc-js";
import { RELEASE } from "@rms/config";
import { MIGRATION_STEPS, MIGRATIONS_COLLECTION, migrate } from "@rms/core";
import { ResourceService, RpcError, createClient } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { Binary, MongoClient, type Collection } from "mongodb";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoreClients } from "../core.js";
import { GATEWAY_TOKEN, startStack, withSecretKey, type Stack } from "../testutil/harness.js";

/** Holds core's CreateResource and UpdateResource calls while `held` is set; `entered` resolves when one is waiting. */
function gate() {
  let release: (() => void) | undefined;
  let held: Promise<void> | undefined;
  let signalEntered: (() => void) | undefined;
  let entered = Promise.resolve();
  let failure: Error | undefined;
  return {
    /** The next held call fails with this error after reaching core (the outcome is unknown to the gateway). */
    failNext(error: Error) {
      failure = error;
    },
    hold() {
      held = new Promise((resolve) => (release = resolve));
      entered = new Promise((resolve) => (signalEntered = resolve));
    },
    release() {
      release?.();
      held = undefined;
    },
    entered: () => entered,
    wrap(core: CoreClients): CoreClients {
      const resources = new Proxy(core.resources, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if ((property !== "createResource" && property !== "updateResource") || typeof value !== "function") return value;
          return async (...args: unknown[]) => {
            if (held) {
              signalEntered?.();
              await held;
            }
            const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            if (failure) {
              const error = failure;
              failure = undefined;
              throw error;
            }
            return result;
          };
        },
      });
      return new Proxy(core, { get: (target, property, receiver) => (property === "resources" ? resources : Reflect.get(target, property, receiver)) });
    },
  };
}

const slowCore = gate();
let stack: Stack;
let mongo: MongoClient;
let records: Collection<Record<string, unknown>>;
/** Core's resources (not public). */
let slots: Collection<Record<string, unknown>>;

beforeAll(async () => {
  stack = await startStack({ wrapCore: (core) => slowCore.wrap(core) });
  mongo = new MongoClient(stack.mongoUri);
  records = mongo.db(stack.databaseName).collection("idempotency_keys");
  slots = mongo.db(stack.databaseName).collection("resources");
});
afterAll(async () => {
  slowCore.release();
  await mongo?.close();
  await stack?.stop();
});

const withKey = (key: string) => ({ "idempotency-key": key });
const listAll = async (key: string) => (await stack.api.get("/v1/resources?limit=100", { key })).json.data as { id: string; name: string }[];

describe("Idempotency-Key on POST", () => {
  it("creates exactly one resource for 200 identical creates sent 50 at once; every success has the same bytes", async () => {
    const { key } = await withSecretKey(stack);
    const request = { key, json: { name: "concurrent", metadata: { n: "1" } }, headers: withKey("key-200") };
    // Four waves of 50 concurrent requests: 200 TLS handshakes at once timed out connecting on a loaded 2-core
    // machine (the client's 10 s connect limit), which says nothing of the gateway's exactly-once.
    const responses: Awaited<ReturnType<typeof stack.api.post>>[] = [];
    for (let wave = 0; wave < 4; wave++) responses.push(...(await Promise.all(Array.from({ length: 50 }, () => stack.api.post("/v1/resources", request)))));
    for (const r of responses) expect([201, 409]).toContain(r.status);
    for (const r of responses.filter((r) => r.status === 409))
      expect(r.json.error).toMatchObject({ type: "idempotency_error", code: "idempotency_key_in_use" });
    const successes = responses.filter((r) => r.status === 201);
    expect(successes.length).toBeGreaterThan(0);
    expect(successes.filter((r) => r.headers["idempotent-replayed"] !== "true")).toHaveLength(1);
    const final = await stack.api.post("/v1/resources", request);
    expect(final.status).toBe(201);
    expect(final.headers["idempotent-replayed"]).toBe("true");
    for (const r of successes) expect(r.text).toBe(final.text);
    const all = await listAll(key);
    expect(all).toHaveLength(1);
    expect(all[0]!.id).toBe(final.json.id);
  });

  it("replays a form request after its JSON version, byte for byte, with Idempotent-Replayed", async () => {
    const { key } = await withSecretKey(stack);
    const first = await stack.api.post("/v1/resources", {
      key,
      json: { name: "both encodings", metadata: { plan: "pro", seats: 5 } },
      headers: withKey("enc"),
    });
    expect(first.status).toBe(201);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const second = await stack.api.post("/v1/resources", { key, form: "name=both+encodings&metadata[plan]=pro&metadata[seats]=5", headers: withKey("enc") });
    expect(second.status).toBe(201);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(second.headers["original-request"]).toBe(first.headers["request-id"]);
    expect(second.headers["request-id"]).not.toBe(first.headers["request-id"]);
    expect(second.text).toBe(first.text);
    expect(await listAll(key)).toHaveLength(1);
  });

  it("refuses the same key with other parameters: 400 idempotency_key_reused", async () => {
    const { key } = await withSecretKey(stack);
    expect((await stack.api.post("/v1/resources", { key, json: { name: "a" }, headers: withKey("reuse") })).status).toBe(201);
    const other = await stack.api.post("/v1/resources", { key, json: { name: "b" }, headers: withKey("reuse") });
    expect(other.status).toBe(400);
    expect(other.json.error).toMatchObject({ type: "idempotency_error", code: "idempotency_key_reused" });
    const otherPath = await stack.api.post("/v1/resources/res_00000000000000000000000", { key, json: { name: "a" }, headers: withKey("reuse") });
    expect(otherPath.json.error?.code).toBe("idempotency_key_reused");
    expect(await listAll(key)).toHaveLength(1);
  });

  it("scopes keys to account and mode", async () => {
    const { account, key } = await withSecretKey(stack);
    const { secret: live } = await account.key("secret", "live");
    const other = await withSecretKey(stack);
    const a = await stack.api.post("/v1/resources", { key, json: { name: "scoped" }, headers: withKey("scope") });
    const b = await stack.api.post("/v1/resources", { key: live, json: { name: "scoped" }, headers: withKey("scope") });
    const c = await stack.api.post("/v1/resources", { key: other.key, json: { name: "scoped" }, headers: withKey("scope") });
    for (const r of [a, b, c]) {
      expect(r.status).toBe(201);
      expect(r.headers["idempotent-replayed"]).toBeUndefined();
    }
    expect(new Set([a.json.id, b.json.id, c.json.id]).size).toBe(3);
  });

  it("answers 409 idempotency_key_in_use while the first request is still executing, then replays it (an update)", async () => {
    const { account, key } = await withSecretKey(stack);
    const created = await stack.api.post("/v1/resources", { key, json: { name: "in flight" } });
    const request = { key, json: { name: "in flight, renamed" }, headers: withKey("flight") };
    const path = `/v1/resources/${created.json.id}`;
    const done = await stack.api.post(path, request);
    expect(done.status).toBe(200);
    // The key's record as core holds it while the first request executes (locked, nothing recorded yet).
    const id = `${account.id}/test/flight` as never;
    const recorded = (await records.findOne({ _id: id }))!;
    const { answer: _answer, ...executing } = recorded;
    await records.replaceOne({ _id: id }, { ...executing, completed: false, locked_until: new Date(Date.now() + 60_000) });
    const second = await stack.api.post(path, request);
    expect(second.status).toBe(409);
    expect(second.json.error).toMatchObject({ type: "idempotency_error", code: "idempotency_key_in_use" });
    expect(second.headers["idempotent-replayed"]).toBeUndefined();
    // Done: the answer is recorded, and a repeat gets it.
    await records.replaceOne({ _id: id }, recorded);
    const third = await stack.api.post(path, request);
    expect(third.headers["idempotent-replayed"]).toBe("true");
    expect(third.text).toBe(done.text);
  });

  it("answers a create whose answer was lost (core unavailable after the write) on its retry with that first answer", async () => {
    const { key } = await withSecretKey(stack);
    const request = { key, json: { name: "unknown outcome" }, headers: withKey("unknown") };
    slowCore.failNext(new RpcError(GrpcStatus.UNAVAILABLE, { type: "api_error", code: "service_unavailable", message: "connection dropped" }));
    const first = await stack.api.post("/v1/resources", request);
    expect(first.status).toBe(503);
    expect(first.headers["retry-after"]).toBe("1");
    const retry = await stack.api.post("/v1/resources", request);
    expect(retry.status).toBe(201);
    // Core made the resource and recorded the answer under the key in the same insert: the retry gets it back.
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.headers["original-request"]).toBe(first.headers["request-id"]);
    const all = await listAll(key);
    expect(all).toHaveLength(1);
    expect(all[0]!.id).toBe(retry.json.id);
  });

  it("answers an update whose answer was lost (core executed it, the reply never came) on its retry with that first answer", async () => {
    const { key } = await withSecretKey(stack);
    const created = await stack.api.post("/v1/resources", { key, json: { name: "to update" } });
    const request = { key, json: { name: "updated once" }, headers: withKey("unknown-update") };
    slowCore.failNext(new RpcError(GrpcStatus.UNAVAILABLE, { type: "api_error", code: "service_unavailable", message: "connection dropped" }));
    const first = await stack.api.post(`/v1/resources/${created.json.id}`, request);
    expect(first.status).toBe(503);
    // Core recorded its answer under the key: the retry is that answer, and the update ran once (one event).
    const retry = await stack.api.post(`/v1/resources/${created.json.id}`, request);
    expect(retry.status).toBe(200);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.headers["original-request"]).toBe(first.headers["request-id"]);
    expect(retry.json.name).toBe("updated once");
    await eventually(async () => {
      const events = await stack.api.get(`/v1/events?object=${created.json.id}`, { key });
      expect(events.json.data.map((e: { type: string }) => e.type)).toEqual(["resource.updated", "resource.created"]);
    });
  });

  it("replays errors that came from executing (400 and 404 from core) with the same bytes", async () => {
    const { key } = await withSecretKey(stack);
    const long = { key, json: { name: "x".repeat(201) }, headers: withKey("too-long") };
    const first = await stack.api.post("/v1/resources", long);
    expect(first.status).toBe(400);
    expect(first.json.error.code).toBe("string_too_long");
    const again = await stack.api.post("/v1/resources", long);
    expect(again.status).toBe(400);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(first.text);

    const missing = { key, json: { name: "n" }, headers: withKey("missing") };
    const notFound = await stack.api.post("/v1/resources/res_00000000000000000000000", missing);
    expect(notFound.status).toBe(404);
    const replayed = await stack.api.post("/v1/resources/res_00000000000000000000000", missing);
    expect(replayed.status).toBe(404);
    expect(replayed.headers["idempotent-replayed"]).toBe("true");
    expect(replayed.text).toBe(notFound.text);
  });

  it("replays every header of the first answer (a 201, a 400 from core, a 404), with its own Request-Id and the replay headers", async () => {
    const { key } = await withSecretKey(stack);
    // Written per message or per connection, not part of the answer (Date may also differ by a second).
    const perMessage = new Set(["date", "connection", "keep-alive", "request-id"]);
    const answerOf = (headers: Readonly<Record<string, string | undefined>>) =>
      Object.fromEntries(Object.entries(headers).filter(([name]) => !perMessage.has(name)));
    const cases: [string, string, Record<string, unknown>, number][] = [
      ["201", "/v1/resources", { name: "h" }, 201],
      ["400 from core", "/v1/resources", { name: "x".repeat(201) }, 400],
      ["404", "/v1/resources/res_00000000000000000000000", { name: "n" }, 404],
    ];
    for (const [label, path, json, status] of cases) {
      const request = { key, json, headers: withKey(`headers-${label}`) };
      const first = await stack.api.post(path, request);
      const replay = await stack.api.post(path, request);
      expect([first.status, replay.status], label).toEqual([status, status]);
      expect(replay.text, label).toBe(first.text);
      expect(answerOf(replay.headers), label).toEqual({
        ...answerOf(first.headers),
        "idempotent-replayed": "true",
        "original-request": first.headers["request-id"],
      });
      expect(replay.headers["request-id"], label).toMatch(/^req_/);
      expect(replay.headers["request-id"], label).not.toBe(first.headers["request-id"]);
      if (status >= 400) expect(replay.headers["stripe-should-retry"], label).toBe("false");
    }
    // Core's record of each keeps the headers the gateway gave with the call (names as spelled, none of the
    // per-request ones); an error's own headers (Stripe-Should-Retry) come with the error it recorded.
    for (const label of ["201", "400 from core", "404"]) {
      const record = await records.findOne({ _id: new RegExp(`/headers-${label}$`) as never });
      const names = (JSON.parse(String((record?.["answer"] as { headers?: string } | undefined)?.headers ?? "[]")) as { name: string }[]).map((h) => h.name);
      expect(names, label).toContain("Content-Type");
      expect(names, label).not.toContain("Request-Id");
    }
  });

  it("saves nothing for requests refused before executing (bad key, 415, gateway validation)", async () => {
    const { account, key } = await withSecretKey(stack);
    const bad = await stack.api.post("/v1/resources", { key: "sk_test_wrong", json: { name: "n" }, headers: withKey("pre") });
    expect(bad.status).toBe(401);
    const unsupported = await stack.api.post("/v1/resources", { key, body: "name=n", headers: { ...withKey("pre"), "content-type": "text/plain" } });
    expect(unsupported.status).toBe(415);
    const unknown = await stack.api.post("/v1/resources", { key, json: { name: "n", colour: "red" }, headers: withKey("pre") });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe("parameter_unknown");
    expect(await records.countDocuments({ account: account.id })).toBe(0);
    const good = await stack.api.post("/v1/resources", { key, json: { name: "n" }, headers: withKey("pre") });
    expect(good.status).toBe(201);
    expect(good.headers["idempotent-replayed"]).toBeUndefined();
  });

  it("ignores Idempotency-Key on GET and DELETE", async () => {
    const { key } = await withSecretKey(stack);
    const created = await stack.api.post("/v1/resources", { key, json: { name: "d" } });
    const got = await stack.api.get(`/v1/resources/${created.json.id}`, { key, headers: withKey("g") });
    const again = await stack.api.get(`/v1/resources/${created.json.id}`, { key, headers: withKey("g") });
    expect(again.headers["idempotent-replayed"]).toBeUndefined();
    expect(again.text).toBe(got.text);
    expect((await stack.api.delete(`/v1/resources/${created.json.id}`, { key, headers: withKey("g") })).status).toBe(200);
    expect((await stack.api.delete(`/v1/resources/${created.json.id}`, { key, headers: withKey("g") })).status).toBe(404);
  });
});

describe("records in idempotency_keys", () => {
  it("takes over a lock left by a core that died while executing, once the lock has ended, and completes the request exactly once", async () => {
    const { account, key } = await withSecretKey(stack);
    // The fingerprint of this request, as core recorded it under another key.
    const body = { name: "taken over" };
    expect((await stack.api.post("/v1/resources", { key, json: body, headers: withKey("probe") })).status).toBe(201);
    const probe = { fingerprint: (await records.findOne({ _id: `${account.id}/test/probe` as never }))!["fingerprint"] as string };
    // The crash: core took the lock for key "crashed" and died inside its create's transaction, which commits the
    // resource with its recorded answer: the server discarded both, the lock stays.
    const now = Date.now();
    const stale = {
      fingerprint: probe.fingerprint,
      account: account.id,
      livemode: false,
      created: new Date(now - 60_000),
      expires_at: new Date(now - 60_000 + 86_400_000),
      owner: "dead",
      completed: false,
      request_id: "req_dead",
    };
    await records.insertOne({ _id: `${account.id}/test/crashed` as never, ...stale, locked_until: new Date(now - 1_000) });
    await records.insertOne({ _id: `${account.id}/test/alive` as never, ...stale, locked_until: new Date(now + 600_000) });

    const stillLocked = await stack.api.post("/v1/resources", { key, json: body, headers: withKey("alive") });
    expect(stillLocked.status).toBe(409);

    const retry = await stack.api.post("/v1/resources", { key, json: body, headers: withKey("crashed") });
    expect(retry.status).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
    const replay = await stack.api.post("/v1/resources", { key, json: body, headers: withKey("crashed") });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.text).toBe(retry.text);
    const record = await records.findOne({ _id: `${account.id}/test/crashed` as never });
    expect(record).toMatchObject({ completed: true, request_id: retry.headers["request-id"] });
    expect(record!["answer"]).toBeDefined();
    expect((record!["created"] as Date).getTime()).toBe(now - 60_000);
    expect((await listAll(key)).filter((r) => r.name === body.name)).toHaveLength(2); // "probe" and "crashed"
  });

  it("keeps a record 24 hours after first use, and treats one past them as absent before the TTL index deletes it", async () => {
    const { account, key } = await withSecretKey(stack);
    const created = await stack.api.post("/v1/resources", { key, json: { name: "kept" } });
    const path = `/v1/resources/${created.json.id}`;
    const first = await stack.api.post(path, { key, json: { name: "old" }, headers: withKey("old") });
    expect(first.status).toBe(200);
    const fresh = await stack.api.post(path, { key, json: { name: "fresh" }, headers: withKey("fresh") });
    expect(fresh.status).toBe(200);
    const record = await records.findOne({ _id: `${account.id}/test/fresh` as never });
    expect((record!["expires_at"] as Date).getTime() - (record!["created"] as Date).getTime()).toBe(24 * 60 * 60 * 1000);
    const replay = await stack.api.post(path, { key, json: { name: "fresh" }, headers: withKey("fresh") });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.text).toBe(fresh.text);

    const dayAndMore = Date.now() - 25 * 60 * 60 * 1000;
    const past = { created: new Date(dayAndMore), expires_at: new Date(dayAndMore + 24 * 60 * 60 * 1000) };
    await records.updateOne({ _id: `${account.id}/test/old` as never }, { $set: past });
    // Past its 24 hours, not deleted yet (the TTL monitor runs once a minute): not replayed; the request executes
    // again under a new record.
    const reused = await stack.api.post(path, { key, json: { name: "old" }, headers: withKey("old") });
    expect(reused.status).toBe(200);
    expect(reused.headers["idempotent-replayed"]).toBeUndefined();
    expect(reused.json.name).toBe("old");
    const renewed = await records.findOne({ _id: `${account.id}/test/old` as never });
    expect((renewed!["expires_at"] as Date).getTime()).toBeGreaterThan(Date.now());
  });
});

describe("core's record of the key (one record per key, whatever the operation)", () => {
  it("keeps the answer in core's record of the key, not with the resource, and replays it from there", async () => {
    const { account, key } = await withSecretKey(stack);
    const first = await stack.api.post("/v1/resources", { key, form: "name=slot&metadata[plan]=pro", headers: withKey("slot") });
    expect(first.status).toBe(201);
    const replay = await stack.api.post("/v1/resources", { key, json: { name: "slot", metadata: { plan: "pro" } }, headers: withKey("slot") });
    expect(replay.status).toBe(201);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.headers["original-request"]).toBe(first.headers["request-id"]);
    expect(replay.text).toBe(first.text);
    expect(await records.findOne({ _id: `${account.id}/test/slot` as never })).toMatchObject({ completed: true, request_id: first.headers["request-id"] });
    // The resource holds no answer and no key: its slot is its own id.
    const resource = await slots.findOne({ _id: first.json.id as never });
    expect(resource).toMatchObject({ idempotency: first.json.id });
    expect(resource!["answer"]).toBeUndefined();
  });

  it("replays the first answer byte for byte after the resource has changed, and after it was deleted", async () => {
    const { key } = await withSecretKey(stack);
    const request = { key, json: { name: "before", metadata: { a: "1" } }, headers: withKey("changed") };
    const first = await stack.api.post("/v1/resources", request);
    await stack.api.post(`/v1/resources/${first.json.id}`, { key, json: { name: "after", status: "paused", metadata: { a: "", b: "2" } } });
    const afterUpdate = await stack.api.post("/v1/resources", request);
    expect(afterUpdate.headers["idempotent-replayed"]).toBe("true");
    expect(afterUpdate.text).toBe(first.text);
    expect((await stack.api.delete(`/v1/resources/${first.json.id}`, { key })).status).toBe(200);
    const afterDelete = await stack.api.post("/v1/resources", request);
    expect(afterDelete.status).toBe(201);
    expect(afterDelete.text).toBe(first.text);
    expect(await listAll(key)).toHaveLength(0);
  });

  it("answers the key's first request after a crash of the gateway between core's answer and its own (the gateway never answered)", async () => {
    const { account, key } = await withSecretKey(stack);
    const json = { name: "crash after insert" };
    // The fingerprint and headers this gateway sends with such a create, as core recorded them for another key.
    await stack.api.post("/v1/resources", { key, json, headers: withKey("model") });
    const modelRecord = (await records.findOne({ _id: `${account.id}/test/model` as never }))!;
    const model = { fingerprint: modelRecord["fingerprint"] as string, headers: (modelRecord["answer"] as { headers: string }).headers };
    // The gateway's call reached core and core inserted; then the gateway died before answering.
    const { secret, id: keyId } = await stack.admin.verifyKey({ secret: key }).then((r) => ({ secret: key, id: r.key!.id }));
    const resources = createClient(ResourceService, stack.coreAddress, { metadata: { authorization: `Bearer ${GATEWAY_TOKEN}` }, timeoutMs: 5_000 });
    const lost = await resources.createResource(
      { tenant: { accountId: account.id, livemode: false }, name: json.name, metadata: [] },
      {
        metadata: {
          "idempotency-key": "lost",
          "rms-request-id": "req_lostanswer",
          "rms-request-fingerprint": model.fingerprint,
          "rms-answer-headers": model.headers,
          "rms-api-key": secret,
          "rms-api-key-id": keyId,
        },
      },
    );
    resources.close();
    const retry = await stack.api.post("/v1/resources", { key, json, headers: withKey("lost") });
    expect(retry.status).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.headers["original-request"]).toBe("req_lostanswer");
    expect(retry.json.id).toBe(lost.resource!.id);
    expect((await listAll(key)).filter((r) => r.name === json.name)).toHaveLength(2); // "model" and "lost"
  });

  it("refuses a key used by another operation, in both orders: 400 idempotency_key_reused", async () => {
    const { key } = await withSecretKey(stack);
    const target = await stack.api.post("/v1/resources", { key, json: { name: "target" } });
    // An update first, then a create under its key.
    expect((await stack.api.post(`/v1/resources/${target.json.id}`, { key, json: { name: "renamed" }, headers: withKey("update-first") })).status).toBe(200);
    const create = await stack.api.post("/v1/resources", { key, json: { name: "renamed" }, headers: withKey("update-first") });
    expect(create.status).toBe(400);
    expect(create.json.error.code).toBe("idempotency_key_reused");
    // A create first, then an update under its key.
    expect((await stack.api.post("/v1/resources", { key, json: { name: "made" }, headers: withKey("create-first") })).status).toBe(201);
    const update = await stack.api.post(`/v1/resources/${target.json.id}`, { key, json: { name: "made" }, headers: withKey("create-first") });
    expect(update.status).toBe(400);
    expect(update.json.error.code).toBe("idempotency_key_reused");
    expect((await listAll(key)).map((r) => r.name).sort()).toEqual(["made", "renamed"]);
  });

  it("answers a record a gateway wrote as HTTP bytes (before core kept the records) as migration 0003 left it: in use, reused, never run again", async () => {
    const { account, key } = await withSecretKey(stack);
    const json = { name: "recorded by the gateway" };
    // This request's fingerprint (the key is not part of it), as core recorded it under another key.
    expect((await stack.api.post("/v1/resources", { key, json, headers: withKey("fp-probe") })).status).toBe(201);
    const fingerprint = (await records.findOne({ _id: `${account.id}/test/fp-probe` as never }))!["fingerprint"] as string;
    const now = Date.now();
    const expiresAt = new Date(now + 20 * 3_600_000);
    // The shape such a gateway left: its HTTP answer (`status`, `body`, `headers`), no `answer`.
    await records.insertOne({
      _id: `${account.id}/test/old-record` as never,
      account: account.id,
      livemode: false,
      fingerprint,
      created: new Date(now - 3_600_000),
      expires_at: expiresAt,
      owner: "old-gateway",
      request_id: "req_oldgateway",
      locked_until: new Date(now - 3_599_000),
      completed: true,
      status: 201,
      body: new Binary(Buffer.from('{"id":"res_recordedbefore","object":"resource"}')),
      headers: [{ name: "Content-Type", value: "application/json; charset=utf-8" }],
    });
    // What a core of this release does at start, on a database the step has not run on yet.
    const step = MIGRATION_STEPS.filter((s) => s.id === "0003-gateway-idempotency-answers");
    await mongo
      .db(stack.databaseName)
      .collection(MIGRATIONS_COLLECTION)
      .deleteOne({ _id: step[0]!.id as never });
    expect((await migrate(mongo.db(stack.databaseName), { owner: "test", release: RELEASE, logger: pino({ level: "silent" }), steps: step })).ran).toEqual([
      step[0]!.id,
    ]);

    const converted = (await records.findOne({ _id: `${account.id}/test/old-record` as never }))!;
    expect(converted).toMatchObject({ completed: false, locked_until: expiresAt, fingerprint });
    expect(converted).not.toHaveProperty("body");
    const repeat = await stack.api.post("/v1/resources", { key, json, headers: withKey("old-record") });
    expect(repeat.status).toBe(409);
    expect(repeat.json.error.code).toBe("idempotency_key_in_use");
    const other = await stack.api.post("/v1/resources", { key, json: { name: "another request" }, headers: withKey("old-record") });
    expect(other.status).toBe(400);
    expect(other.json.error.code).toBe("idempotency_key_reused");
    expect((await listAll(key)).filter((r) => r.name === json.name || r.name === "another request")).toHaveLength(1); // the probe's only
  });

  it("refuses a replay to a key revoked since the first answer: 401, not the recorded answer", async () => {
    const { account, key } = await withSecretKey(stack);
    const request = { key, json: { name: "then revoked" }, headers: withKey("revoked") };
    expect((await stack.api.post("/v1/resources", request)).status).toBe(201);
    const { key: found } = await stack.admin.verifyKey({ secret: key });
    await stack.admin.revokeKey({ keyId: found!.id });
    const replay = await stack.api.post("/v1/resources", request);
    expect(replay.status).toBe(401);
    expect(replay.json.error.code).toBe("api_key_revoked");
    expect(account.id).toMatch(/^acct_/);
  });

  it("records a refusal of core's under the key: the repeat gets it byte for byte, another request under the key is 400 idempotency_key_reused", async () => {
    const { key } = await withSecretKey(stack);
    const long = { key, json: { name: "y".repeat(201) }, headers: withKey("refused") };
    const first = await stack.api.post("/v1/resources", long);
    expect(first.status).toBe(400);
    expect(first.json.error.code).toBe("string_too_long");
    const again = await stack.api.post("/v1/resources", long);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(first.text);
    const fixed = await stack.api.post("/v1/resources", { key, json: { name: "fixed" }, headers: withKey("refused") });
    expect(fixed.status).toBe(400);
    expect(fixed.json.error.code).toBe("idempotency_key_reused");
    expect(await listAll(key)).toHaveLength(0);
  });
});
