import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A webhook receiver on 127.0.0.1: answers by path (`/ok` 200, `/down` 503, `/silent` never), keeps what it got. */
async function startReceiver() {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const answer = (path: string, res: ServerResponse) => {
    if (path === "/ok") res.end("thanks");
    else if (path === "/down") res.writeHead(503).end("down for maintenance");
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
  stack = await startStack({ coreSettings: { secretKeyring: { primary: { id: "testkey2", bytes: Buffer.alloc(32, 3) } }, webhookAllowPrivate: true } });
  ({ key, account } = await withSecretKey(stack));
  receiver = await startReceiver();
  mongo = await new MongoClient(stack.mongoUri).connect();
});
afterAll(async () => {
  await mongo?.close();
  await receiver?.close();
  await stack?.stop();
});

async function newEndpoint(path: string, k = key): Promise<Json> {
  const created = await stack.api.post("/v1/webhook_endpoints", { key: k, form: { url: receiver.url(path), enabled_events: ["resource.created"] } });
  expect(created.status).toBe(201);
  return created.json;
}

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
      "error",
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
      error: null,
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
    const viaJson = await stack.api.post(`/v1/events/${event.id}/resend`, { key, json: { webhook_endpoint: endpoint.id } });
    expect(viaJson.status).toBe(200);
    expect(viaJson.json).toMatchObject({ status: "failed", response_status: 503, response_body: "down for maintenance", error: "http_error", trigger: "manual" });
  });

  it("waits past the gateway's usual 10 s deadline for a receiver that never answers: the attempt ends at the 15 s delivery timeout", async () => {
    const endpoint = await newEndpoint("/silent");
    const event = await newEvent();
    const resent = await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } });
    expect(resent.status).toBe(200);
    expect(resent.json).toMatchObject({ status: "failed", error: "timeout", response_status: null, trigger: "manual" });
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
  });
});

describe("attempts", () => {
  it("lists an endpoint's attempts newest first, filtered by event and status, in the list envelope", async () => {
    const endpoint = await newEndpoint("/down");
    const [e1, e2] = [await newEvent(), await newEvent()];
    const resend = async (event: Json) => (await stack.api.post(`/v1/events/${event.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } })).json;
    const a1 = await resend(e1);
    await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key, form: { url: receiver.url("/ok") } });
    const a2 = await resend(e2);
    const a3 = await resend(e1);
    const list = await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts`, { key });
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ object: "list", url: `/v1/webhook_endpoints/${endpoint.id}/attempts`, has_more: false });
    expect(list.json.data).toEqual([a3, a2, a1]);
    const ids = async (query: string) => (await stack.api.get(`/v1/webhook_endpoints/${endpoint.id}/attempts?${query}`, { key })).json.data.map((a: Json) => a.id);
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

describe("recover", () => {
  it("schedules one recovery delivery per event whose deliveries to the endpoint all failed, and counts them", async () => {
    const endpoint = await newEndpoint("/ok");
    const [failed, delivered] = [await newEvent(), await newEvent()];
    const deliveries = mongo.db(stack.databaseName).collection("webhook_deliveries");
    // Fan-out queued a scheduled delivery of each (no worker runs here): end both as failed, as the workers
    // would after the schedule; then a resend reaches the receiver with one of them.
    await eventually(async () => expect(await deliveries.countDocuments({ endpoint: endpoint.id })).toBe(2));
    await deliveries.updateMany({ endpoint: endpoint.id }, { $set: { status: "failed" } });
    expect((await stack.api.post(`/v1/events/${delivered.id}/resend`, { key, form: { webhook_endpoint: endpoint.id } })).json.status).toBe("succeeded");
    const since = Math.floor(Date.now() / 1000) - 3600;
    const viaForm = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: { since: String(since) } });
    expect(viaForm.status).toBe(200);
    expect(viaForm.text).toBe('{"object":"recovery","scheduled":1}');
    const recovery = await deliveries.findOne({ endpoint: endpoint.id, trigger: "recovery" });
    expect(recovery).toMatchObject({ event: failed.id, status: "pending" });
    // The recovery is pending now: nothing more to schedule.
    const again = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, json: { since } });
    expect(again.text).toBe('{"object":"recovery","scheduled":0}');
  });

  it("refuses a since older than 14 days, in the future or missing (400), and a disabled endpoint (409)", async () => {
    const endpoint = await newEndpoint("/ok");
    const nowS = Math.floor(Date.now() / 1000);
    for (const since of [nowS - 15 * 86_400, nowS + 3600, "yesterday"]) {
      const bad = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: { since: String(since) } });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param: "since" });
    }
    const missing = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: {} });
    expect(missing.json.error).toMatchObject({ code: "parameter_missing", param: "since" });
    await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}`, { key, form: { status: "disabled" } });
    const disabled = await stack.api.post(`/v1/webhook_endpoints/${endpoint.id}/recover`, { key, form: { since: String(nowS - 60) } });
    expect(disabled.status).toBe(409);
    expect(disabled.json.error).toMatchObject({ type: "invalid_request_error", code: "state_conflict" });
  });
});
