import { newRequestId } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import { eventually, startTcpRelay, type TcpRelay } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import type { MongoClient } from "mongodb";
import { pino } from "pino";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { gatewayMongoClient } from "../stores.js";
import { RequestLogRecorder } from "./recorder.js";
import { RequestLogStore, type RequestLogDocument } from "./store.js";

// The recorder against a real mongod, reached through a TCP relay that the test cuts to stop the database for it.

function record(i: number): RequestLogDocument {
  const ms = Date.now() + i;
  return {
    _id: newRequestId(ms),
    account: "acct_recorder",
    livemode: false,
    method: "GET",
    path: `/v1/resources/n${i}`,
    status: 200,
    status_class: "2xx",
    api_key: "key_recorder",
    key_kind: "secret",
    idempotent_replayed: false,
    duration_ms: 1,
    client_ip: "127.0.0.1",
    user_agent: null,
    created: Math.floor(ms / 1000),
    request_params_json: null,
    response_body_json: null,
    expires_at: new Date(ms + 86_400_000),
  };
}

function captured() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: "info" }, stream) };
}

let relay: TcpRelay;
let client: MongoClient;
let store: RequestLogStore;
beforeAll(async () => {
  relay = await startTcpRelay(inject("mongoUri"));
  client = gatewayMongoClient(relay.uri);
  store = new RequestLogStore(client.db(testDatabaseName("gateway_request_log_recorder")));
  await store.ensureIndexes();
});
afterAll(async () => {
  await store?.collection.db.dropDatabase().catch(() => undefined);
  await client?.close();
  await relay?.close();
});

describe("RequestLogRecorder", () => {
  it("writes what waits in one insert per batch, after the flush interval", async () => {
    let inserts = 0;
    const sink = {
      insertBatch(batch: readonly RequestLogDocument[]) {
        inserts++;
        return store.insertBatch(batch);
      },
    };
    const written: number[] = [];
    const recorder = new RequestLogRecorder(sink, captured().logger, {
      capacity: 10_000,
      flushMs: 50,
      counters: { dropped: () => {}, written: (n) => written.push(n) },
    });
    const records = Array.from({ length: 300 }, (_, i) => record(i));
    for (const r of records) recorder.add(r);
    expect(inserts).toBe(0); // nothing is written on the adding request's path
    await eventually(async () => expect(await store.collection.countDocuments({ _id: { $in: records.map((r) => r._id) } })).toBe(300));
    // The documents are readable before the insert's acknowledgement (majority) has come back and been counted: CI
    // once read `written` in between.
    await eventually(() => expect(written).toEqual([300]));
    expect(inserts).toBe(1);
    await recorder.close();
  });

  it("while the database is stopped: keeps at most its capacity, drops the oldest, counts them, logs once, then writes the rest", async () => {
    const logs = captured();
    let dropped = 0;
    const recorder = new RequestLogRecorder(store, logs.logger, {
      capacity: 50,
      flushMs: 20,
      dropLogMs: 60_000,
      counters: { dropped: (n) => (dropped += n), written: () => {} },
    });
    await relay.cut();
    const records = Array.from({ length: 200 }, (_, i) => record(1_000 + i));
    const extra = Array.from({ length: 10 }, (_, i) => record(2_000 + i));
    try {
      // Adding is synchronous: it never waits for the database, whatever state that is in.
      for (const r of records) recorder.add(r);
      expect(recorder.waiting).toBe(50);
      expect(dropped).toBe(150);
      // A batch tried and failed while cut keeps what it held (the buffer's bound still holds).
      await eventually(() => expect(logs.lines.some((l) => l["msg"] === "request logs not written yet; retrying")).toBe(true), { timeoutMs: 15_000 });
      expect(recorder.waiting).toBe(50);
      for (const r of extra) recorder.add(r);
      expect(dropped).toBe(160);
    } finally {
      await relay.restore();
    }
    const dropLines = logs.lines.filter((l) => typeof l["msg"] === "string" && (l["msg"] as string).startsWith("request logs dropped"));
    expect(dropLines).toHaveLength(1); // once per interval, not once per record
    // Back: the newest 50 are written, the dropped ones never are.
    const newest = records.slice(160).map((r) => r._id);
    await eventually(async () => expect(recorder.waiting).toBe(0), { timeoutMs: 30_000, intervalMs: 100 });
    expect(await store.collection.countDocuments({ _id: { $in: records.map((r) => r._id) } })).toBe(40);
    expect(await store.collection.countDocuments({ _id: { $in: newest } })).toBe(40);
    expect(await store.collection.countDocuments({ _id: { $in: extra.map((r) => r._id) } })).toBe(10);
    await recorder.close();
  }, 60_000);

  it("takes a batch sent again (an unknown outcome) without error", async () => {
    const batch = [record(5_000), record(5_001)];
    await store.insertBatch(batch);
    await expect(store.insertBatch([...batch, record(5_002)])).resolves.toEqual([]);
    expect(await store.collection.countDocuments({ _id: { $in: [...batch.map((r) => r._id)] } })).toBe(2);
  });

  it("drops a record the driver cannot encode alone, counts it, logs it once, and writes the rest of its batch at once", async () => {
    const logs = captured();
    const counted = { written: 0, refused: 0 };
    const recorder = new RequestLogRecorder(store, logs.logger, {
      capacity: 10_000,
      flushMs: 20,
      counters: { dropped: () => {}, written: (n) => (counted.written += n), refused: (n) => (counted.refused += n) },
    });
    // A field name with a NUL byte: no BSON document can hold it, so the driver refuses the whole insert of its batch.
    const unencodable = { ...record(6_000), ["a\u0000b"]: 1 } as RequestLogDocument;
    const batch = [record(6_001), unencodable, record(6_002)];
    for (const r of batch) recorder.add(r);
    await recorder.flush();
    expect(await store.collection.countDocuments({ _id: { $in: batch.map((r) => r._id) } })).toBe(2);
    expect(counted).toEqual({ written: 2, refused: 1 });
    expect(recorder.waiting).toBe(0);
    const later = [record(6_003), record(6_004)];
    for (const r of later) recorder.add(r);
    await recorder.flush();
    expect(await store.collection.countDocuments({ _id: { $in: later.map((r) => r._id) } })).toBe(2);
    const lines = logs.lines.filter((l) => String(l["msg"]).startsWith("request log refused"));
    expect(lines).toEqual([expect.objectContaining({ request_id: unencodable._id, refused: 1, reason: expect.stringContaining("null bytes") })]);
    expect(logs.lines.some((l) => l["msg"] === "request logs not written yet; retrying")).toBe(false);
    await recorder.close();
  });

  it("drops a record the server refuses alone (its own write error), and writes the rest of its batch", async () => {
    const db = store.collection.db;
    const refusedStatus = 599;
    // The server's own refusal of one document: a validator that takes no record of this status.
    await db.command({ collMod: store.collection.collectionName, validator: { status: { $ne: refusedStatus } }, validationAction: "error" });
    try {
      const counted = { written: 0, refused: 0 };
      const recorder = new RequestLogRecorder(store, captured().logger, {
        capacity: 10_000,
        flushMs: 20,
        counters: { dropped: () => {}, written: (n) => (counted.written += n), refused: (n) => (counted.refused += n) },
      });
      const refused = { ...record(7_000), status: refusedStatus };
      const batch = [record(7_001), refused, record(7_002)];
      for (const r of batch) recorder.add(r);
      await recorder.flush();
      expect(recorder.waiting).toBe(0);
      expect(counted).toEqual({ written: 2, refused: 1 });
      expect(await store.collection.countDocuments({ _id: { $in: batch.map((r) => r._id) } })).toBe(2);
      await recorder.close();
    } finally {
      await db.command({ collMod: store.collection.collectionName, validator: {}, validationLevel: "off" });
    }
  });
});
