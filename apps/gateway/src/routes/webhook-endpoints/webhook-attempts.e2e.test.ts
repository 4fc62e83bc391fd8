import { spawnSync } from "node:child_process";
import { createPublicKey, verify } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A webhook receiver on 127.0.0.1: answers by path (`/ok` 200, `/down` 503, `/gone` 410, `/silent` never), keeps what it got. */
async function startReceiver() {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const answer = (path: string, res: ServerResponse) => {
    if (path === "/ok") res.end("thanks");
    else if (path === "/down") res.writeHead(503).end("down for maintenance");
    else if (path === "/gone") res.writeHead(410).end("gone");
    // "/silent" never answers: the attempt ends at the delivery timeout.
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      answer(req.url ?? "", res);
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    received,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let stack: Stack;
let key: string;
let account: Awaited<ReturnType<typeof withSecretKey>>["account"];
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let mongo: MongoClient;
beforeAll(async () => {
  // Deliveries go to 127.0.0.1 over http, as WEBHOOK_ALLOW_PRIVATE=true allows in development and tests.
  stack = await startStack({
    coreSettings: { secretKeyring: { primary: { id: "testkey2", bytes: Buffer.alloc(32, 3) } }, webhookAllowPrivate: true, webhookRetrySchedule: [50] },
    worker: true,
  });
  ({ key, account } = await withSecretKey(stack));
  receiver = await startReceiver();
  mongo = await new MongoClient(stack.mongoUri).connect();
});
afterAll(async () => {
  await mongo?.close();
  await receiver?.close();
  await stack?.stop();
});

/**
 * An endpoint at the receiver's `path`. A worker runs beside core (resends are made by it, in the endpoint's lane),
 * so by default an endpoint subscribes to a type these tests never emit: only resends reach it.
 */
async function newEndpoint(path: string, k = key, fields: Record<string, unknown> = {}): Promise<Json> {
  const created = await stack.api.post("/v1/webhook_endpoints", { key: k, form: { url: receiver.url(path), enabled_events: ["job.failed"], ...fields } });
  expect(created.status).toBe(201);
  return created.json;
}

/**
 * Subscribes an endpoint to resource.created once the events a test resends are fanned out: a resend must be of a
 * type the endpoint subscribes to, and subscribing only now keeps the scheduled deliveries of those events away.
 */
async function subscribe(endpoint: Json, k = key): Promise<void> {
  const updated = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key: k, json: { enabled_events: ["resource.created"] } });
  expect(updated.status).toBe(200);
  subscribed.push({ id: endpoint.id, key: k });
}

/** Endpoints `subscribe` subscribed: deleted after their test, so no later test's events are delivered to them. */
const subscribed: { id: string; key: string }[] = [];
afterEach(async () => {
  for (const { id, key: k } of subscribed.splice(0)) await stack.api.delete(`/v1/webhook_endpoints/${id}`, { key: k });
});

/** A new resource's resource.created event, once it is listed. */
async function newEvent(k = key): Promise<Json> {
  const { json: resource } = await stack.api.post("/v1/resources", { key: k, form: { name: "hooked" } });
  return eventually(async () => {
    const { json: list } = await stack.api.get("/v1/events?type=resource.created&limit=100", { key: k });
    const event = list.data.find((e: Json) => e.data.object.id === resource.id);
    expect(event).toBeDefined();
    return event as Json;
  });
}

describe("resend", () => {
  it("delivers the event now and answers the attempt; the delivery verifies with the Standard Webhooks library", async () => {
    const endpoint = await newEndpoint("/ok");
    const event = await newEvent();
    await subscribe(endpoint);
    const before = receiver.received.length;
    const resent = await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } });
    expect(resent.status).toBe(200);
    expect(Object.keys(resent.json)).toEqual([
      "id",
      "object",
      "event",
      "webhook_endpoint",
      "status",
      "response_status",
      "response_body",
      "failure_code",
      "duration_ms",
      "trigger",
      "created",
    ]);
    expect(resent.json).toMatchObject({
      object: "webhook_attempt",
      event: event.id,
      webhook_endpoint: endpoint.id,
      status: "succeeded",
      response_status: 200,
      response_body: "thanks",
      failure_code: null,
      trigger: "manual",
    });
    const delivery = receiver.received.slice(before).find((r) => r.headers["webhook-id"] === event.id);
    expect(delivery).toBeDefined();
    const payload = new Webhook(endpoint.secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as Json;
    expect(payload).toMatchObject({ id: event.id, object: "event", type: "resource.created", data: event.data });
    // A secret of another endpoint does not verify it.
    const other = await newEndpoint("/ok");
    expect(() => new Webhook(other.secret).verify(delivery!.body, delivery!.headers as Record<string, string>)).toThrow();
  });

  it("answers a failed attempt with 200 and its outcome; JSON and form requests alike", async () => {
    const endpoint = await newEndpoint("/down");
    const event = await newEvent();
    await subscribe(endpoint);
    const viaJson = await stack.api.post(`/v1/events/${event.id}/resend`, { key, json: { webhook_endpoint: endpoint.id } });
    expect(viaJson.status).toBe(200);
    expect(viaJson.json).toMatchObject({
      status: "failed",
      response_status: 503,
      response_body: "down for maintenance",
      failure_code: "http_error",
      trigger: "manual",
    });
  });

  it("waits past the gateway's usual 10 s deadline for a receiver that never answers: the attempt ends at the 15 s delivery timeout", async () => {
    const endpoint = await newEndpoint("/silent");
    const event = await newEvent();
    await subscribe(endpoint);
    const resent = await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } });
    expect(resent.status).toBe(200);
    expect(resent.json).toMatchObject({ status: "failed", failure_code: "timeout", response_status: null, trigger: "manual" });
  }, 30_000);

  it("refuses what it cannot resend: 400 without webhook_endpoint, 404 for another account's event or endpoint, 403 without webhooks:write", async () => {
    const endpoint = await newEndpoint("/ok");
    const event = await newEvent();
    const missing = await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: {} });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: "parameter_missing", param: "webhook_endpoint" });
    const { key: stranger } = await withSecretKey(stack);
    const strangersEndpoint = await newEndpoint("/ok", stranger);
    const notMine = await stack.api.post(`/v1/events/${event.id}/resend`, { key: stranger, form: { webhook_endpoint: strangersEndpoint.id } });
    expect(notMine.status).toBe(404);
    const notMyEndpoint = await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: strangersEndpoint.id } });
    expect(notMyEndpoint.status).toBe(404);
    expect(notMyEndpoint.json.error).toMatchObject({ code: "resource_missing", param: "webhook_endpoint" });
    const { secret: reader } = await account.key("restricted", "test", { scopes: ["events:read"] });
    const refused = await stack.api.post(`/v1/events/${event.id}/resend`, { key: reader, form: { webhook_endpoint: endpoint.id } });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe("insufficient_scope");
    // An endpoint that does not subscribe to the event's type is refused, with the reason, and nothing is sent.
    const before = receiver.received.length;
    const unsubscribed = await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } });
    expect(unsubscribed.status).toBe(400);
    expect(unsubscribed.json.error).toMatchObject({
      type: "invalid_request_error",
      code: "parameter_invalid",
      param: "webhook_endpoint",
      message: `Invalid webhook_endpoint: ${endpoint.id} is not subscribed to resource.created events (its enabled_events: job.failed).`,
    });
    expect((await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts`, { key })).json.data).toEqual([]);
    expect(receiver.received.slice(before).filter((r) => r.headers["webhook-id"] === event.id)).toEqual([]);
  });
});

describe("attempts", () => {
  it("lists an endpoint's attempts newest first, filtered by event and status, in the list envelope", async () => {
    const endpoint = await newEndpoint("/down");
    const [e1, e2] = [await newEvent(), await newEvent()];
    await subscribe(endpoint);
    const resend = async (event: Json) => (await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } })).json;
    const a1 = await resend(e1);
    await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key, form: { url: receiver.url("/ok") } });
    const a2 = await resend(e2);
    const a3 = await resend(e1);
    const list = await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts`, { key });
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ object: "list", url: `/v1/webhook_endpoints/${endpoint.id}/attempts`, has_more: false });
    expect(list.json.data).toEqual([a3, a2, a1]);
    const ids = async (query: string) =>
      (await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts?${query}`, { key })).json.data.map((a: Json) => a.id);
    expect(await ids(`event=${e1.id}`)).toEqual([a3.id, a1.id]);
    expect(await ids("status=failed")).toEqual([a1.id]);
    expect(await ids(`status=succeeded&event=${e2.id}`)).toEqual([a2.id]);
    expect(await ids(`limit=1&starting_after=${a3.id}`)).toEqual([a2.id]);
    expect(await ids(`ending_before=${a1.id}`)).toEqual([a3.id, a2.id]);
    for (const [query, param] of [
      ["status=pending", "status"],
      ["event=nope", "event"],
    ]) {
      const bad = await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts?${query}`, { key });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param });
    }
    const { key: stranger } = await withSecretKey(stack);
    expect((await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts`, { key: stranger })).status).toBe(404);
  });
});

describe("delivery_stats", () => {
  it("an endpoint's success rates, failure streak with its latest failure, pending deliveries and hourly counts; attempts by created", async () => {
    const endpoint = await newEndpoint("/down", key, { enabled_events: ["resource.created"] });
    const event = await newEvent();
    const deliveries = mongo.db(stack.databaseName).collection("webhook_deliveries");
    // The scheduled delivery fails twice (one retry) and ends.
    await eventually(async () => expect(await deliveries.countDocuments({ endpoint: endpoint.id, event: event.id, status: "failed" })).toBe(1), {
      timeoutMs: 20_000,
    });
    const stats = await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/delivery_stats`, { key });
    expect(stats.status).toBe(200);
    expect(Object.keys(stats.json)).toEqual([
      "object",
      "webhook_endpoint",
      "as_of",
      "last_hour",
      "last_day",
      "failure_streak",
      "failing_since",
      "last_failure",
      "last_success_at",
      "pending",
      "next_attempt_at",
      "buckets",
      "counted_from",
    ]);
    expect(stats.json).toMatchObject({
      object: "webhook_endpoint_delivery_stats",
      webhook_endpoint: endpoint.id,
      last_hour: { succeeded: 0, failed: 2, success_rate: 0 },
      last_day: { succeeded: 0, failed: 2, success_rate: 0 },
      failure_streak: 2,
      last_failure: { object: "webhook_attempt", event: event.id, status: "failed", response_status: 503, response_body: "down for maintenance" },
      last_success_at: null,
      pending: 0,
      next_attempt_at: null,
      counted_from: null,
    });
    expect(stats.json.failing_since).toBeGreaterThan(0);
    expect(stats.json.buckets).toHaveLength(24);
    expect(stats.json.buckets.at(-1)).toMatchObject({ failed: 2, succeeded: 0, pending: 0 });

    // The event's page: this endpoint gave up after its retries; another that does not subscribe got none.
    const other = await newEndpoint("/ok");
    const deliveriesOf = await stack.api.get(`/v1/events/${event.id}/deliveries`, { key });
    expect(deliveriesOf.status).toBe(200);
    expect(deliveriesOf.json).toMatchObject({ object: "list", url: `/v1/events/${event.id}/deliveries`, has_more: false });
    const byEndpoint = (id: string) => deliveriesOf.json.data.find((d: Json) => d.webhook_endpoint === id);
    expect(byEndpoint(endpoint.id)).toEqual({
      object: "webhook_delivery",
      event: event.id,
      webhook_endpoint: endpoint.id,
      status: "failed",
      attempts: 2,
      next_attempt_at: null,
      ended_reason: "schedule_exhausted",
      subscribed: true,
    });
    expect(byEndpoint(other.id)).toMatchObject({ status: "none", subscribed: false, attempts: 0 });
    await stack.api.delete(`/v1/webhook_endpoints/${other.id}`, { key });

    // A success ends the streak and moves the rate.
    await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key, form: { url: receiver.url("/ok") } });
    expect((await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } })).json.status).toBe("succeeded");
    const after = (await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/delivery_stats`, { key })).json;
    expect(after).toMatchObject({ failure_streak: 0, failing_since: null, last_hour: { succeeded: 1, failed: 2, success_rate: 0.3333 } });
    expect(after.last_success_at).toBeGreaterThan(0);
    expect((await stack.api.get(`/v1/events/${event.id}/deliveries`, { key })).json.data.find((d: Json) => d.webhook_endpoint === endpoint.id)).toMatchObject({
      status: "succeeded",
    });

    // The attempts list takes the same time bounds as the other lists.
    const now = Math.floor(Date.now() / 1000);
    const within = (await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts?created[gte]=${now - 3600}&created[lte]=${now + 60}`, { key })).json;
    expect(within.data).toHaveLength(3);
    expect((await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts?created[gt]=${now + 60}`, { key })).json.data).toEqual([]);
    expect((await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts?status=failed&created[lt]=${now + 60}`, { key })).json.data).toHaveLength(2);

    const { key: stranger } = await withSecretKey(stack);
    expect((await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/delivery_stats`, { key: stranger })).status).toBe(404);
    await stack.api.delete(`/v1/webhook_endpoints/${endpoint.id}`, { key });
  });
});

describe("recover", () => {
  it("schedules one recovery delivery per event whose deliveries to the endpoint all failed, and counts them", async () => {
    const endpoint = await newEndpoint("/down", key, { enabled_events: ["resource.created"] });
    const [failed, delivered] = [await newEvent(), await newEvent()];
    const deliveries = mongo.db(stack.databaseName).collection("webhook_deliveries");
    // Fan-out queued a scheduled delivery of each; the worker tries each twice (the schedule has one retry) and
    // ends both as failed. Then a resend reaches the receiver with one of them.
    await eventually(async () => expect(await deliveries.countDocuments({ endpoint: endpoint.id, status: "failed" })).toBe(2), { timeoutMs: 20_000 });
    await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key, form: { url: receiver.url("/ok") } });
    expect((await stack.api.post(`/v1/events/${delivered.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } })).json.status).toBe("succeeded");
    const since = Math.floor(Date.now() / 1000) - 3600;
    const viaForm = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: { since: String(since) } });
    expect(viaForm.status).toBe(200);
    expect(viaForm.text).toBe('{"object":"recovery","scheduled":1,"has_more":false}');
    const recovery = await deliveries.findOne({ endpoint: endpoint.id, trigger: "recovery" });
    expect(recovery).toMatchObject({ event: failed.id });
    // The recovery is pending now, or delivered already by the worker: nothing more to schedule either way.
    const again = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, json: { since } });
    expect(again.text).toBe('{"object":"recovery","scheduled":0,"has_more":false}');
    // Out of the next tests' way (it subscribes to resource.created).
    await stack.api.delete(`/v1/webhook_endpoints/${endpoint.id}`, { key });
  });

  it("refuses a since older than 14 days, in the future or missing (400), and a disabled endpoint (409)", async () => {
    const endpoint = await newEndpoint("/ok");
    const nowS = Math.floor(Date.now() / 1000);
    for (const since of [nowS - 15 * 86_400, nowS + 3600, "yesterday"]) {
      const bad = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: { since: String(since) } });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param: "since" });
    }
    // 0 is present (and out of range) in both encodings, as 1 is: the message names the allowed range.
    for (const zero of [{ form: { since: "0" } }, { json: { since: 0 } }, { json: { since: "0" } }, { form: { since: "1" } }]) {
      const bad = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, ...zero });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({
        code: "parameter_invalid",
        param: "since",
        message: expect.stringMatching(/from \d+ \(14 days ago\) to \d+ \(now\)/),
      });
    }
    const missing = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: {} });
    expect(missing.json.error).toMatchObject({ code: "parameter_missing", param: "since" });
    await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key, form: { status: "disabled" } });
    const disabled = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: { since: String(nowS - 60) } });
    expect(disabled.status).toBe(409);
    expect(disabled.json.error).toMatchObject({ type: "invalid_request_error", code: "state_conflict" });
  });
});

/** Verifies the `v1a` signatures of a delivery with the public key alone, as a receiver does with node:crypto. */
function verifiesV1a(publicKey: string, delivery: Received): boolean {
  const raw = Buffer.from(publicKey.slice("whpk_".length), "base64");
  // An Ed25519 SubjectPublicKeyInfo: a fixed 12-byte prefix, then the 32 raw bytes.
  const key = createPublicKey({ key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]), format: "der", type: "spki" });
  const signed = Buffer.from(`${delivery.headers["webhook-id"]}.${delivery.headers["webhook-timestamp"]}.${delivery.body}`);
  return String(delivery.headers["webhook-signature"])
    .split(" ")
    .filter((s) => s.startsWith("v1a,"))
    .some((s) => verify(null, signed, key, Buffer.from(s.slice(4), "base64")));
}

/** Python's `cryptography` (an independent Ed25519), when installed: the verdict on a delivery's v1a signatures, else null. */
function verifiedByPython(publicKey: string, delivery: Received): string | null {
  const script = [
    "import base64, json, sys",
    "from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey",
    "d = json.load(sys.stdin)",
    "key = Ed25519PublicKey.from_public_bytes(base64.b64decode(d['public_key'][5:]))",
    "message = ('%s.%s.' % (d['id'], d['timestamp'])).encode() + d['body'].encode()",
    "ok = False",
    "for part in d['signature'].split(' '):",
    "    version, _, signature = part.partition(',')",
    "    if version != 'v1a': continue",
    "    try:",
    "        key.verify(base64.b64decode(signature), message); ok = True",
    "    except Exception:",
    "        pass",
    "print('verified' if ok else 'failed')",
  ].join("\n");
  const input = JSON.stringify({
    public_key: publicKey,
    id: delivery.headers["webhook-id"],
    timestamp: delivery.headers["webhook-timestamp"],
    signature: delivery.headers["webhook-signature"],
    body: delivery.body,
  });
  const run = spawnSync("python3", ["-c", script], { input, encoding: "utf8", timeout: 20_000 });
  if (run.status !== 0 && /No module named|ENOENT/.test(`${run.stderr}${run.error?.message ?? ""}`)) return null;
  return run.stdout.trim();
}

describe("v1a signatures end to end", () => {
  it(
    "a v1a endpoint's delivery verifies with its public key alone (node:crypto, and Python's cryptography when installed); the v1 library finds no " +
      "signature it knows",
    async () => {
      const endpoint = await newEndpoint("/ok", key, { signature_scheme: "v1a" });
      expect(endpoint).toMatchObject({ signature_scheme: "v1a", public_key: expect.stringMatching(/^whpk_/) });
      expect(endpoint).not.toHaveProperty("secret");
      const event = await newEvent();
      await subscribe(endpoint);
      const before = receiver.received.length;
      const resent = await stack.api.post(`/v1/events/${event.id}/resend`, { key, json: { webhook_endpoint: endpoint.id } });
      expect(resent.json).toMatchObject({ status: "succeeded", failure_code: null });
      const delivery = receiver.received.slice(before).find((r) => r.headers["webhook-id"] === event.id)!;
      expect(String(delivery.headers["webhook-signature"])).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
      expect(verifiesV1a(endpoint.public_key, delivery)).toBe(true);
      expect(JSON.parse(delivery.body)).toMatchObject({ id: event.id, type: "resource.created", data: event.data });
      // A changed body, or another endpoint's public key, does not verify.
      expect(verifiesV1a(endpoint.public_key, { ...delivery, body: delivery.body.replace("hooked", "hacked") })).toBe(false);
      const other = await newEndpoint("/ok", key, { signature_scheme: "v1a" });
      expect(verifiesV1a(other.public_key, delivery)).toBe(false);
      const python = verifiedByPython(endpoint.public_key, delivery);
      if (python !== null) expect(python).toBe("verified");
      expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString("base64")}`).verify(delivery.body, delivery.headers as Record<string, string>)).toThrow(
        /No matching signature/,
      );
    },
  );

  it("during a rotation from v1 to v1a both schemes sign: the old secret with the library, the new public key with node:crypto", async () => {
    const endpoint = await newEndpoint("/ok");
    const rotated = (await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { key, form: { signature_scheme: "v1a", expires_in: "3600" } }))
      .json;
    const event = await newEvent();
    await subscribe(endpoint);
    const before = receiver.received.length;
    await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } });
    const delivery = receiver.received.slice(before).find((r) => r.headers["webhook-id"] === event.id)!;
    expect(
      String(delivery.headers["webhook-signature"])
        .split(" ")
        .map((s) => s.split(",")[0]),
    ).toEqual(["v1a", "v1"]);
    expect(verifiesV1a(rotated.public_key, delivery)).toBe(true);
    expect(new Webhook(endpoint.secret).verify(delivery.body, delivery.headers as Record<string, string>)).toMatchObject({ id: event.id });
  });
});

describe("webhook_endpoint.disabled", () => {
  it("a 410 disables the endpoint with one event (reason gone, the endpoint as GET shows it), for the account's other subscribed endpoints only", async () => {
    const { key: own } = await withSecretKey(stack);
    const listening = await stack.api.post("/v1/webhook_endpoints", {
      key: own,
      json: { url: receiver.url("/ok"), enabled_events: ["webhook_endpoint.disabled"] },
    });
    const everything = await stack.api.post("/v1/webhook_endpoints", { key: own, json: { url: receiver.url("/ok"), enabled_events: ["*"] } });
    const gone = await newEndpoint("/gone", own);
    const event = await newEvent(own);
    await subscribe(gone, own);
    const attempt = (await stack.api.post(`/v1/events/${event.id}/resend`, { key: own, form: { webhook_endpoint: gone.id } })).json;
    expect(attempt).toMatchObject({ status: "failed", response_status: 410, failure_code: "http_error" });

    const shown = (await stack.api.get(`/v1/webhook_endpoints/${gone.id}`, { key: own })).json;
    expect(shown.status).toBe("disabled");
    const [disabled] = await eventually(async () => {
      const page = (await stack.api.get("/v1/events?type=webhook_endpoint.disabled", { key: own })).json;
      expect(page.data).toHaveLength(1);
      return page.data as Json[];
    });
    // Fanned out to the account's two other subscribed endpoints (`pending_webhooks` 2 at first; the worker beside
    // core delivers to both, so it may be lower when read).
    expect(disabled).toMatchObject({ type: "webhook_endpoint.disabled", request: { id: null, idempotency_key: null } });
    expect(disabled!.pending_webhooks).toBeLessThanOrEqual(2);
    expect(disabled!.data).toEqual({ object: shown, reason: "gone" });
    const withoutPending = ({ pending_webhooks: _, ...rest }: Json) => rest;
    // The prefix and the object's own events find it too; its sequence is the endpoint's change.
    expect((await stack.api.get("/v1/events?type=webhook_endpoint.*", { key: own })).json.data.map(withoutPending)).toEqual([withoutPending(disabled!)]);
    expect((await stack.api.get(`/v1/events?object=${gone.id}`, { key: own })).json.data.map(withoutPending)).toEqual([withoutPending(disabled!)]);
    // Delivered like any event, to those two only: the listening endpoint verifies it with its secret.
    const deliveredTo = await eventually(async () => {
      const attempts = await mongo.db(stack.databaseName).collection("webhook_attempts").find({ event: disabled!.id, status: "succeeded" }).toArray();
      expect(attempts).toHaveLength(2);
      return attempts.map((a) => a["endpoint"] as string);
    });
    expect(deliveredTo.sort()).toEqual([listening.json.id, everything.json.id].sort());
    // The worker records a batch's attempts first and the event's count after them (docs/webhooks.md): read until it is in.
    await eventually(async () => expect((await stack.api.get(`/v1/events/${disabled!.id}`, { key: own })).json.pending_webhooks).toBe(0));
    const before = receiver.received.length;
    expect((await stack.api.post(`/v1/events/${disabled!.id}/resend`, { key: own, form: { webhook_endpoint: listening.json.id } })).json.status).toBe(
      "succeeded",
    );
    const delivery = receiver.received.slice(before).find((r) => r.headers["webhook-id"] === disabled!.id)!;
    expect(new Webhook(listening.json.secret).verify(delivery.body, delivery.headers as Record<string, string>)).toMatchObject({
      data: { reason: "gone", object: shown },
    });

    // Exactly once per disabling: another 410 to the disabled endpoint records nothing more.
    await stack.api.post(`/v1/events/${event.id}/resend`, { key: own, form: { webhook_endpoint: gone.id } });
    expect((await stack.api.get("/v1/events?type=webhook_endpoint.disabled", { key: own })).json.data).toHaveLength(1);
    // `enabled_events` takes the type; deleting the endpoint keeps its event.
    expect((await stack.api.delete(`/v1/webhook_endpoints/${gone.id}`, { key: own })).status).toBe(200);
    expect((await stack.api.get(`/v1/events/${disabled!.id}`, { key: own })).json).toMatchObject({ id: disabled!.id });
  });
});
