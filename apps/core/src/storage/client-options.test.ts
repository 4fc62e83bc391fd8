import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { expect, inject, it } from "vitest";
import { startCore } from "../server.js";
import { startWorker } from "../worker/run.js";
import { durabilityOf as durability } from "./client-options.js";

const PRODUCTION = { w: "majority", journal: true, retryWrites: true, retryReads: true, readPreference: "primary", readConcern: "local" };

const ADMIN_TOKEN = "test-admin-token-0123456789";
const withParams = (params: Record<string, string>) => {
  const url = new URL(inject("mongoUri"));
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
};

it("core and workers open their database with majority, journaled, retryable writes and primary reads; a URI cannot weaken them", async () => {
  // The options core gives win over these in the URI.
  const overridden = withParams({ w: "1", retryWrites: "false", readPreference: "secondaryPreferred" });
  const databaseName = testDatabaseName("client-options");
  const core = await startCore({ mongoUri: overridden, databaseName, adminToken: ADMIN_TOKEN, relay: false });
  const worker = await startWorker({ mongoUri: overridden, databaseName, tasks: [] });
  try {
    expect(durability(core.mongo)).toEqual(PRODUCTION);
    expect(durability(worker.mongo)).toEqual(PRODUCTION);
    // And the server accepts it (a one-member replica set has its majority).
    await expect(
      core.mongo
        .db(databaseName)
        .collection("probe")
        .insertOne({ _id: "written" } as never),
    ).resolves.toMatchObject({ acknowledged: true });
  } finally {
    await core.mongo.db(databaseName).dropDatabase();
    await worker.stop();
    await core.stop(1_000);
  }
});

it("refuses a URI whose options the driver would let win over core's (journal=false), naming them", async () => {
  const unjournaled = withParams({ journal: "false" });
  const databaseName = testDatabaseName("client-options");
  await expect(startCore({ mongoUri: unjournaled, databaseName, adminToken: ADMIN_TOKEN, relay: false })).rejects.toThrow(/journal \(false, required true\)/);
  await expect(startWorker({ mongoUri: unjournaled, databaseName, tasks: [] })).rejects.toThrow(/journal/);
});

it("only the chaos run's weakened build (RMS_FAULTS writes.w1) writes with write concern 1", async () => {
  const { parseFaults } = await import("../faults.js");
  const { openClient } = await import("./client-options.js");
  expect(parseFaults("resource.create:0.02").weakWrites).toBeUndefined();
  expect(parseFaults("resource.create:0.02,writes.w1:1").weakWrites).toBe(true);
  const weak = openClient(inject("mongoUri"), true);
  const normal = openClient(inject("mongoUri"));
  try {
    expect(durability(weak)).toEqual({ ...PRODUCTION, w: 1 });
    expect(durability(normal)).toEqual(PRODUCTION);
  } finally {
    await weak.close();
    await normal.close();
  }
});
