// Crashes and outages against the real processes: core and gateway as children, a real database.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase, testDatabaseName, type RunningDatabase } from "@rms/test-db";
import { dropDatabase, eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess } from "./processes.js";

const dataDir = mkdtempSync(join(tmpdir(), "rms-faults-"));
const running: { stop(graceMs: number): Promise<void> }[] = [];
afterEach(async () => {
  for (const p of running.splice(0).reverse()) await p.stop(2_000);
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function countResources(mongoUri: string, databaseName: string, filter: Record<string, unknown>): Promise<number> {
  const client = await new MongoClient(mongoUri).connect();
  try {
    return await client.db(databaseName).collection("resources").countDocuments(filter);
  } finally {
    await client.close();
  }
}

describe("faults", () => {
  it("core killed after its database write but before answering: a retry with the same key returns that same resource", async () => {
    const mongoUri = inject("mongoUri");
    const databaseName = testDatabaseName("crash");
    // Stopped last (the list is stopped in reverse): the database goes once nothing uses it.
    running.push({ stop: () => dropDatabase(mongoUri, databaseName) });
    const corePort = await freePort();
    const coreAddr = `127.0.0.1:${corePort}`;
    const doomedCore = await startCoreProcess({ mongoUri, databaseName, port: corePort, faults: "resource.create:1" });
    running.push(doomedCore);
    const gatewayPort = await freePort();
    running.push(await startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port: gatewayPort }));
    const { accountId, secret } = await newTestKey(coreAddr);

    const call = () =>
      httpsCall(dataDir, gatewayPort, "POST", "/v1/resources", { key: secret, form: "name=crash-once", headers: { "idempotency-key": "crash-key-1" } });
    const first = await call();
    // The connection to core was lost after the request reached it: the gateway cannot know, and must not say 503.
    expect(first.status).toBe(500);
    expect(JSON.parse(first.body).error).toMatchObject({ type: "api_error", code: "outcome_unknown" });
    expect(await doomedCore.exited).toBe("SIGKILL");
    // The write committed before the crash.
    expect(await countResources(mongoUri, databaseName, { account: accountId })).toBe(1);

    running.push(await startCoreProcess({ mongoUri, databaseName, port: corePort }));
    let retry = await call();
    // The gateway reconnects to the new core (5xx meanwhile); the create committed with its key's record, so the
    // retry is answered the first answer.
    const until = Date.now() + 60_000;
    while ((retry.status >= 500 || retry.status === 409) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      retry = await call();
    }
    expect(retry.status).toBe(201);
    const resource = JSON.parse(retry.body);
    expect(resource).toMatchObject({ object: "resource", name: "crash-once" });
    expect(await countResources(mongoUri, databaseName, { account: accountId })).toBe(1);
    const again = await call();
    expect(JSON.parse(again.body).id).toBe(resource.id);
  }, 180_000);

  it("core killed between the writes of a keyed create (after the lock, after the insert, after the record, before the commit): nothing committed, and " +
    "a retry with the same key completes it once", async () => {
    const mongoUri = inject("mongoUri");
    // The three crash points at once, each with its own core, gateway and database.
    const crashAt = async (point: string) => {
      const databaseName = testDatabaseName(`crash-${point.replace(".", "-")}`);
      running.push({ stop: () => dropDatabase(mongoUri, databaseName) });
      const corePort = await freePort();
      const coreAddr = `127.0.0.1:${corePort}`;
      // The key's lock is a write of its own; the insert and the record's completion are in one transaction: a core
      // killed after the lock, or inside the transaction, leaves the lock and nothing else.
      const doomedCore = await startCoreProcess({ mongoUri, databaseName, port: corePort, faults: `${point}:1` });
      running.push(doomedCore);
      const gatewayPort = await freePort();
      running.push(await startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port: gatewayPort }));
      // A second core and gateway on the same database, already serving, where the retries go (a core started after
      // the crash may wait for the dead transaction while it declares its indexes).
      const otherCorePort = await freePort();
      running.push(await startCoreProcess({ mongoUri, databaseName, port: otherCorePort }));
      const otherGatewayPort = await freePort();
      running.push(await startGatewayProcess({ coreAddr: `127.0.0.1:${otherCorePort}`, mongoUri, databaseName, dataDir, port: otherGatewayPort }));
      const { accountId, secret } = await newTestKey(coreAddr);
      const callAt = (port: number) => () =>
        httpsCall(dataDir, port, "POST", "/v1/resources", { key: secret, form: "name=crash-once", headers: { "idempotency-key": "crash-key" } });
      const first = await callAt(gatewayPort)();
      const call = callAt(otherGatewayPort);
      expect(first.status, point).toBe(500);
      expect(JSON.parse(first.body).error, point).toMatchObject({ code: "outcome_unknown" });
      expect(await doomedCore.exited, point).toBe("SIGKILL");
      expect(await countResources(mongoUri, databaseName, { account: accountId }), point).toBe(0);

      // 409 in flight until the dead call's lock ends (its deadline and 5 s), then the retry takes it over and
      // executes: one resource.
      const started = Date.now();
      let retry = await call();
      while ((retry.status >= 500 || retry.status === 409) && Date.now() - started < 150_000) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        retry = await call();
      }
      console.log(`${point}: the retry completed ${Math.round((Date.now() - started) / 1000)} s after the crash`);
      expect(retry.status, point).toBe(201);
      expect(await countResources(mongoUri, databaseName, { account: accountId }), point).toBe(1);
      const again = await call();
      expect(again.headers["idempotent-replayed"], point).toBe("true");
      expect(JSON.parse(again.body).id, point).toBe(JSON.parse(retry.body).id);
    };
    await Promise.all(["keyed.locked", "keyed.executed", "keyed.recorded"].map(crashAt));
  }, 300_000);

  it("database stopped and restarted under traffic: 503 while it is down, then success with no restart of core or gateway", async () => {
    const dbPort = await freePort();
    const dbDir = join(dataDir, "db");
    let database: RunningDatabase = await startDatabase({ dataDir: dbDir, port: dbPort, env: { ...process.env, MONGODB_URI: "" } });
    running.push({ stop: () => database.stop() });
    const mongoUri = database.uri;
    const databaseName = testDatabaseName("outage");
    const corePort = await freePort();
    const coreAddr = `127.0.0.1:${corePort}`;
    running.push(await startCoreProcess({ mongoUri, databaseName, port: corePort }));
    const gatewayPort = await freePort();
    running.push(await startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port: gatewayPort }));
    const { secret } = await newTestKey(coreAddr);
    const create = (n: number) => httpsCall(dataDir, gatewayPort, "POST", "/v1/resources", { key: secret, form: `name=outage-${n}` });

    expect((await create(0)).status).toBe(201);
    await database.stop();

    const during = await create(1);
    expect(during.status).toBe(503);
    expect(JSON.parse(during.body).error).toMatchObject({ type: "api_error", code: "service_unavailable" });
    expect(Number(during.headers["retry-after"])).toBeGreaterThan(0);
    const status = await eventually(
      async () => {
        const answer = await httpsCall(dataDir, gatewayPort, "GET", "/v1/status");
        expect(answer.status).toBe(503);
        return answer;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    expect(JSON.parse(status.body)).toMatchObject({ object: "status", status: "degraded", version: "1.4" });

    database = await startDatabase({ dataDir: dbDir, port: dbPort, env: { ...process.env, MONGODB_URI: "" } });
    await eventually(async () => expect((await create(2)).status).toBe(201), { timeoutMs: 30_000, intervalMs: 500 });
    const list = JSON.parse((await httpsCall(dataDir, gatewayPort, "GET", "/v1/resources?limit=100", { key: secret })).body);
    // Nothing half-written: the request that failed during the outage left nothing behind.
    expect(list.data.map((r: { name: string }) => r.name).sort()).toEqual(["outage-0", "outage-2"]);
  }, 240_000);
});
