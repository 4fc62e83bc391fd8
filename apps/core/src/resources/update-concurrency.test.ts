import { AdminService, ResourceService, createClient } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { ADMIN_TOKEN } from "../testutil/harness.js";
import { startCoreProcess } from "../testutil/process.js";
import type { PendingEvent, ResourceDocument } from "./model.js";

// Two core processes over one database: the version check in the filtered update is
// the only thing that serialises writes (no lock shared between the processes).
const databaseName = testDatabaseName("core");
let cores: Awaited<ReturnType<typeof startCoreProcess>>[] = [];
let mongo: MongoClient;

beforeAll(async () => {
  cores = await Promise.all([startCoreProcess(databaseName), startCoreProcess(databaseName)]);
  mongo = new MongoClient(inject("mongoUri"));
}, 60_000);
afterAll(async () => {
  await Promise.all(cores.map((c) => c.stop()));
  await mongo?.db(databaseName).dropDatabase();
  await mongo?.close();
});

it(
  "concurrent updates of one resource through two core processes (each with " + "its relay): none lost, versions strictly increase, each event relayed once",
  async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const clients = cores.map((c) => createClient(ResourceService, c.address, { metadata: auth }));
    const admin = createClient(AdminService, cores[0]!.address, { metadata: auth });
    try {
      const { account } = await admin.createAccount({});
      const tenant = { accountId: account!.id, livemode: false };
      const { resource } = await clients[0]!.createResource({ tenant, name: "raced" });
      const id = resource!.id;

      // Each update adds its own metadata key: a lost update would lose a key.
      const updates = 24;
      await Promise.all(
        Array.from({ length: updates }, (_, i) =>
          clients[i % 2]!.updateResource({ tenant, id, metadata: [{ key: `k${i}`, value: "x" }] }, { metadata: { "rms-request-id": `req_${i}` } }),
        ),
      );

      const doc = (await mongo.db(databaseName).collection<ResourceDocument>("resources").findOne({ _id: id }))!;
      expect(doc.metadata.map((p) => p.k).sort()).toEqual(Array.from({ length: updates }, (_, i) => `k${i}`).sort());
      expect(doc.version).toBe(updates);
      // Both processes' relays drain the outbox into `events` (each told of its own writes, both sweeping).
      await eventually(async () =>
        expect((await mongo.db(databaseName).collection<ResourceDocument>("resources").findOne({ _id: id }))!.pending_events).toEqual([]),
      );
      const relayed = await mongo.db(databaseName).collection<PendingEvent>("events").find({ "object.id": id }).sort({ sequence: 1 }).toArray();
      expect(relayed.map((e) => e.sequence)).toEqual(Array.from({ length: updates + 1 }, (_, i) => i));
      const events = relayed.filter((e) => e.type === "resource.updated");
      // Exactly one event per update request, none twice.
      expect(events.map((e) => e.request.id).sort()).toEqual(Array.from({ length: updates }, (_, i) => `req_${i}`).sort());
      // In the order they committed, each update saw the previous one's result: the metadata grows by one key each time.
      expect(events.map((e) => e.object.metadata.length)).toEqual(Array.from({ length: updates }, (_, i) => i + 1));
      expect(events.map((e) => (e.previous_attributes?.metadata ?? []).length)).toEqual(Array.from({ length: updates }, (_, i) => i));
    } finally {
      for (const c of clients) c.close();
      admin.close();
    }
  },
);
