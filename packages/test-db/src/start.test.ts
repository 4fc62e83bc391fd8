import type {} from "./vitest-setup.js";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createServer } from "node:net";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, inject, it } from "vitest";
import { describeDatabase, startDatabase, type Engine, type RunningDatabase } from "./start.js";
import { ensureMongoJavaServer, mongoJavaServerArgs, MONGO_JAVA_SERVER_HEAP, MONGO_JAVA_SERVER_VERSION } from "./mongo-java-server.js";
import { reachable } from "./mongodb-memory-server.js";
import { freePort } from "./ports.js";
import { eventually } from "./testkit/eventually.js";
import { testDatabaseName } from "./names.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

const scratch = mkdtempSync(join(tmpdir(), "rms-test-db-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment with no external database and no forced engine, so the launcher must start its own. */
const ownEnv = { ...process.env, MONGODB_URI: "", RMS_DB_ENGINE: "", RMS_TEST_DB_ENGINE: "" };
const id = (s: string): never => s as never;

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
  await withClient(first.uri, (c) =>
    c
      .db("keep")
      .collection("docs")
      .insertOne({ _id: "kept" as never }),
  );
  await first.stop();
  const second = await startDatabase({ env: ownEnv, dataDir, engine, port });
  expect(second.uri).toBe(first.uri);
  expect(second.logFile).toBe(join(dataDir, `${engine}.log`));
  expect(
    await withClient(second.uri, (c) =>
      c
        .db("keep")
        .collection("docs")
        .countDocuments({ _id: "kept" as never }),
    ),
  ).toBe(1);
  await second.stop();
}

describe("startDatabase", () => {
  it("prefers MONGODB_URI and then does not start anything", async () => {
    const db = await startDatabase({ env: { MONGODB_URI: "mongodb://example.invalid:1/" } });
    expect(db).toMatchObject({ engine: "external", uri: "mongodb://example.invalid:1/" });
    expect(db.pid).toBeUndefined();
    await db.stop();
  });

  it("refuses an unknown forced engine (FerretDB is gone), and a forced engine that is not there", async () => {
    await expect(startDatabase({ env: { RMS_DB_ENGINE: "ferretdb" } })).rejects.toThrow(
      /^unknown database engine "ferretdb" \(RMS_DB_ENGINE\): use one of external, testcontainers, mongod, mongodb-memory-server, mongo-java-server$/,
    );
    await expect(startDatabase({ env: {}, engine: "external" })).rejects.toThrow(/^database engine external \(RMS_DB_ENGINE\) cannot start: MONGODB_URI is not set$/);
  });

  it("gives up mongodb-memory-server in one log line when its download site has no route, then starts mongo-java-server in memory", async () => {
    const lines: string[] = [];
    const db = await startDatabase({ env: ownEnv, skip: ["mongod", "testcontainers"], logger: (line) => lines.push(line) });
    try {
      expect(db).toMatchObject({ engine: "mongo-java-server", version: MONGO_JAVA_SERVER_VERSION, storage: "memory" });
      expect(lines.filter((line) => line.startsWith("mongodb-memory-server"))).toEqual([expect.stringMatching(/does not answer; trying the next engine$/)]);
      await roundTripAndStop(db);
    } finally {
      await db.stop();
    }
  });

  it("a forced engine that cannot start fails with one line naming it", async () => {
    const outcome = startDatabase({ env: ownEnv, engine: "mongodb-memory-server" });
    await expect(outcome).rejects.toThrow(
      /^database engine mongodb-memory-server \(RMS_DB_ENGINE\) cannot start: no MongoDB \S+ binary cached and its download site \(\S+\) does not answer$/,
    );
    await expect(startDatabase({ env: { ...ownEnv, RMS_DB_ENGINE: "mongod", PATH: "" } })).rejects.toThrow(
      /^database engine mongod \(RMS_DB_ENGINE\) cannot start: no mongod on PATH$/,
    );
  });

  it("the download probe gives up within its bound when nothing answers", async () => {
    // A name that cannot resolve, and a port nothing listens on.
    expect(await reachable("no-such-host.invalid", 443, 2_000)).toBe(false);
    expect(await reachable("127.0.0.1", await freePort(), 2_000)).toBe(false);
  });

  it("RMS_TEST_DB_ENGINE still forces an engine, RMS_DB_ENGINE wins over it", async () => {
    await expect(startDatabase({ env: { RMS_TEST_DB_ENGINE: "mongod", PATH: "" } })).rejects.toThrow(/engine mongod .*no mongod on PATH/);
    await expect(startDatabase({ env: { RMS_DB_ENGINE: "postgres", RMS_TEST_DB_ENGINE: "mongod" } })).rejects.toThrow(/unknown database engine "postgres"/);
  });

  it("tries testcontainers when a container runtime answers (tests only: not for a data directory), and moves on in one line when it fails", async () => {
    // A stand-in runtime on DOCKER_HOST that answers every request with 500.
    const socket = join(scratch, "runtime.sock");
    const runtime = createServer((connection) => {
      connection.on("error", () => undefined);
      connection.once("data", () => connection.end("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
    });
    await new Promise<void>((resolve) => runtime.listen(socket, resolve));
    const env = { ...ownEnv, DOCKER_HOST: `unix://${socket}` };
    const skip = ["mongod", "mongodb-memory-server"] as const;
    try {
      const lines: string[] = [];
      const durable = await startDatabase({ env, skip, dataDir: join(scratch, "no-container"), logger: (line) => lines.push(line) });
      await durable.stop();
      expect(lines).toEqual([]);
      const db = await startDatabase({ env, skip, logger: (line) => lines.push(line) });
      await db.stop();
      expect(db.engine).toBe("mongo-java-server");
      expect(lines).toEqual([expect.stringMatching(/^testcontainers: .*; trying the next engine$/)]);
    } finally {
      runtime.close();
    }
  });

  it("takes a mongod on PATH before mongodb-memory-server and mongo-java-server (a stand-in mongod here)", async () => {
    // The stand-in answers the launcher's mongod arguments (--dbpath D --port P ...) with mongo-java-server.
    const server = await ensureMongoJavaServer({ env: ownEnv });
    const bin = join(scratch, "bin");
    mkdirSync(bin, { recursive: true });
    const java = mongoJavaServerArgs(server, "memory", scratch, 0).map((arg) => `'${arg}'`);
    writeFileSync(join(bin, "mongod"), `#!/bin/sh\nexec java ${java.slice(0, -2).join(" ")} "$4" memory\n`, { mode: 0o755 });
    const lines: string[] = [];
    const db = await startDatabase({ env: { ...ownEnv, PATH: `${bin}${delimiter}${process.env.PATH}` }, skip: ["testcontainers"], logger: (line) => lines.push(line) });
    try {
      expect(db).toMatchObject({ engine: "mongod", version: "mongod" });
      expect(lines).toEqual([]);
      await roundTripAndStop(db);
    } finally {
      await db.stop();
    }
  });

  it.skipIf(!has("mongod"))("uses mongod on PATH before the embedded engines", async () => {
    const db = await startDatabase({ env: ownEnv, skip: ["testcontainers"] });
    expect(db.engine).toBe("mongod");
    await roundTripAndStop(db);
  });

  it("mongo-java-server: H2 file with a data directory, memory without, a bounded heap, and stop leaves no process", async () => {
    const db = await startDatabase({ env: ownEnv, engine: "mongo-java-server" });
    expect(db).toMatchObject({ engine: "mongo-java-server", version: MONGO_JAVA_SERVER_VERSION, storage: "memory" });
    expect(describeDatabase(db)).toBe(`mongo-java-server ${MONGO_JAVA_SERVER_VERSION} (in memory)`);
    expect(readFileSync(`/proc/${db.pid}/cmdline`, "utf8").split("\0")).toContain(`-Xmx${MONGO_JAVA_SERVER_HEAP}`);
    await roundTripAndStop(db);
    await persists("mongo-java-server");
  });

  it("mongo-java-server on H2: every acknowledged write survives a SIGKILL of the database", async () => {
    const dataDir = join(scratch, "sigkill");
    const first = await startDatabase({ env: ownEnv, dataDir, engine: "mongo-java-server" });
    expect(first.storage).toBe("h2");
    const port = Number(new URL(first.uri).port);
    const inserted = 300;
    await withClient(first.uri, async (client) => {
      const docs = client.db("durable").collection("docs");
      for (let i = 0; i < inserted; i++) await docs.insertOne({ _id: id(`d${i}`), version: 0 });
      await docs.insertMany([{ _id: id("many1") }, { _id: id("many2") }]);
      for (let i = 0; i < inserted; i += 3) await docs.updateOne({ _id: id(`d${i}`), version: 0 }, { $inc: { version: 1 } });
      await docs.findOneAndUpdate({ _id: id("d1") }, { $set: { touched: true } });
      await docs.deleteOne({ _id: id("d2") });
      await docs.createIndex({ key: 1 }, { unique: true, sparse: true });
      // Killed right after the last acknowledgement: nothing gets a chance to flush on the way out.
      process.kill(first.pid!, "SIGKILL");
    });
    await eventually(() => expect(alive(first.pid!)).toBe(false));
    const second = await startDatabase({ env: ownEnv, dataDir, engine: "mongo-java-server", port });
    try {
      await withClient(second.uri, async (client) => {
        const docs = client.db("durable").collection("docs");
        expect(await docs.countDocuments()).toBe(inserted + 2 - 1);
        expect(await docs.countDocuments({ version: 1 })).toBe(inserted / 3);
        expect(await docs.findOne({ _id: id("d1") })).toEqual({ _id: "d1", version: 0, touched: true });
        expect(await docs.findOne({ _id: id("d2") })).toBeNull();
        expect((await docs.indexes()).map((index) => index.name)).toContain("key_1");
      });
    } finally {
      await second.stop();
    }
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
    const logFile = join(scratch, "stubborn.log");
    const server = spawnServer("sh", ["-c", "trap '' TERM; echo trapped >&2; while :; do sleep 0.1; done"], logFile);
    await eventually(() => expect(tail(logFile)).toContain("trapped"));
    await server.stop();
    expect(server.child.signalCode).toBe("SIGKILL");
  }, 15_000);
});
