import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { expect, inject, it } from "vitest";
import { usesSecondaryIndexes } from "./index.js";

it("tells mongo-java-server (no secondary indexes) from MongoDB by the server's own answer", async () => {
  const client = await new MongoClient(inject("mongoUri")).connect();
  try {
    expect(await usesSecondaryIndexes(client.db("db_engine_probe"))).toBe(inject("mongoEngine") !== "mongo-java-server");
  } finally {
    await client.close();
  }
});
