import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, inject, it } from "vitest";
import { startDatabase } from "./start.js";
import { testDatabaseName } from "./names.js";

const scratch = mkdtempSync(join(tmpdir(), "rms-test-db-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment with no external database, so the launcher must start its own. */
const ownEnv = { ...process.env, MONGODB_URI: "" };

async function withClient<T>(uri: string, use: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = await new MongoClient(uri).connect();
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

describe("startDatabase", () => {
  it("prefers MONGODB_URI and then does not start anything", async () => {
    const db = await startDatabase({ env: { MONGODB_URI: "mongodb://example.invalid:1/" } });
    expect(db).toMatchObject({ engine: "external", uri: "mongodb://example.invalid:1/" });
    await db.stop();
  });

  it("starts the embedded engine when nothing else is there, and stop leaves no process", async () => {
    const db = await startDatabase({ env: ownEnv, skip: ["mongod"] });
    expect(db.engine).toBe("ferretdb");
    expect(db.version).toMatch(/^v1\./);
    await withClient(db.uri, async (client) => {
      const docs = client.db(testDatabaseName("launcher")).collection("docs");
      await docs.insertOne({ _id: "a" as never, n: 1 });
      expect(await docs.findOne({ _id: "a" as never })).toEqual({ _id: "a", n: 1 });
    });
    await db.stop();
    await expect(withClient(db.uri.replace("/?", "/") + "?serverSelectionTimeoutMS=500", (c) => c.db("admin").command({ ping: 1 }))).rejects.toThrow();
  });

  it("keeps data in a given data directory across a stop and a start", async () => {
    const dataDir = join(scratch, "persist");
    const first = await startDatabase({ env: ownEnv, dataDir, skip: ["mongod"] });
    await withClient(first.uri, (c) => c.db("keep").collection("docs").insertOne({ _id: "kept" as never }));
    await first.stop();
    const second = await startDatabase({ env: ownEnv, dataDir, skip: ["mongod"] });
    expect(await withClient(second.uri, (c) => c.db("keep").collection("docs").countDocuments({ _id: "kept" as never }))).toBe(1);
    await second.stop();
  });

  it("gives each test file a database of its own on the shared server", async () => {
    const [a, b] = [testDatabaseName("same file"), testDatabaseName("same file")];
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[a-z0-9_]{1,63}$/);
    await withClient(inject("mongoUri"), async (client) => {
      await client.db(a).collection("docs").insertOne({ x: 1 });
      expect(await client.db(b).collection("docs").countDocuments()).toBe(0);
    });
  });
});
