import type {} from "./vitest-setup.js";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, inject, it } from "vitest";
import { startDatabase, type Engine, type RunningDatabase } from "./start.js";
import { testDatabaseName } from "./names.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

const scratch = mkdtempSync(join(tmpdir(), "rms-test-db-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment with no external database and no forced engine, so the launcher must start its own. */
const ownEnv = { ...process.env, MONGODB_URI: "", RMS_TEST_DB_ENGINE: "" };

async function withClient<T>(uri: string, use: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 2_000 }).connect();
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function has(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Insert and read back, stop, and check that the server process is gone. */
async function roundTripAndStop(db: RunningDatabase): Promise<void> {
  await withClient(db.uri, async (client) => {
    const docs = client.db(testDatabaseName("launcher")).collection("docs");
    await docs.insertOne({ _id: "a" as never, n: 1 });
    expect(await docs.findOne({ _id: "a" as never })).toEqual({ _id: "a", n: 1 });
  });
  expect(db.pid).toBeGreaterThan(0);
  expect(alive(db.pid!)).toBe(true);
  await db.stop();
  expect(alive(db.pid!)).toBe(false);
  await expect(withClient(db.uri, (c) => c.db("admin").command({ ping: 1 }))).rejects.toThrow();
}

/** Data kept in `dataDir` across a stop and a start at the same address (`port`). */
async function persists(engine: Engine): Promise<void> {
  const dataDir = join(scratch, `persist-${engine}`);
  const first = await startDatabase({ env: ownEnv, dataDir, engine });
  const port = Number(new URL(first.uri).port);
  await withClient(first.uri, (c) => c.db("keep").collection("docs").insertOne({ _id: "kept" as never }));
  await first.stop();
  const second = await startDatabase({ env: ownEnv, dataDir, engine, port });
  expect(second.uri).toBe(first.uri);
  expect(second.logFile).toBe(join(dataDir, `${engine}.log`));
  expect(await withClient(second.uri, (c) => c.db("keep").collection("docs").countDocuments({ _id: "kept" as never }))).toBe(1);
  await second.stop();
}

describe("startDatabase", () => {
  it("prefers MONGODB_URI and then does not start anything", async () => {
    const db = await startDatabase({ env: { MONGODB_URI: "mongodb://example.invalid:1/" } });
    expect(db).toMatchObject({ engine: "external", uri: "mongodb://example.invalid:1/" });
    expect(db.pid).toBeUndefined();
    await db.stop();
  });

  it("refuses an unknown forced engine, and a forced engine that is not there", async () => {
    await expect(startDatabase({ env: { RMS_TEST_DB_ENGINE: "postgres" } })).rejects.toThrow(/unknown engine "postgres"/);
    await expect(startDatabase({ env: {}, engine: "external" })).rejects.toThrow(/needs MONGODB_URI/);
    await expect(startDatabase({ env: { PATH: "" }, engine: "mongod" })).rejects.toThrow(/no mongod on PATH/);
  });

  it.skipIf(!has("go"))("starts the embedded engine when nothing else is there, and stop leaves no process", async () => {
    const db = await startDatabase({ env: ownEnv, skip: ["mongod", "testcontainers"] });
    expect(db.engine).toBe("ferretdb");
    expect(db.version).toMatch(/^v1\./);
    await roundTripAndStop(db);
  });

  it.skipIf(!has("go"))("keeps FerretDB's data in a given data directory across a stop and a start", () => persists("ferretdb"));

  it.skipIf(!has("java") || !has("javac") || !has("mvn"))("falls back to mongo-java-server (forced here), which persists too", async () => {
    const db = await startDatabase({ env: ownEnv, engine: "mongo-java-server" });
    expect(db).toMatchObject({ engine: "mongo-java-server", version: "1.47.0" });
    await roundTripAndStop(db);
    await persists("mongo-java-server");
  });

  it("gives each test file a database of its own on the shared server", async () => {
    const [a, b] = [testDatabaseName("Same File.test"), testDatabaseName("same file")];
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[a-z0-9_]{1,63}$/);
    expect(testDatabaseName("x".repeat(200)).length).toBeLessThanOrEqual(63);
    await withClient(inject("mongoUri"), async (client) => {
      await client.db(a).collection("docs").insertOne({ x: 1 });
      expect(await client.db(b).collection("docs").countDocuments()).toBe(0);
      expect(await client.db(a).collection("docs").countDocuments()).toBe(1);
      await client.db(a).dropDatabase();
    });
  });
});

describe("server processes", () => {
  it("a server that dies while starting fails fast, and its log explains why", async () => {
    const logFile = join(scratch, "dying.log");
    const server = spawnServer("sh", ["-c", "echo 'fatal: no space left' >&2; exit 3"], logFile);
    await expect(waitForPing("mongodb://127.0.0.1:1/", 10_000, server)).rejects.toThrow(/exited with 3/);
    expect(tail(logFile)).toContain("fatal: no space left");
  });

  it("stop escalates to SIGKILL when SIGTERM is ignored", async () => {
    const server = spawnServer("sh", ["-c", "trap '' TERM; while :; do sleep 0.1; done"], join(scratch, "stubborn.log"));
    await new Promise((r) => setTimeout(r, 200));
    await server.stop();
    expect(server.child.signalCode).toBe("SIGKILL");
  }, 15_000);
});
