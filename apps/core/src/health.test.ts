import { credentials, loadPackageDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { testDatabaseName } from "@rms/test-db";
import { eventually, startTcpRelay, type TcpRelay } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { DATABASE_HEALTH_SERVICE, DATABASE_SLOW_MS } from "@rms/proto";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { startCore, type RunningCore } from "./server.js";

const uri = new URL(inject("mongoUri"));
const hosts = uri.host.split(",");
const databaseName = testDatabaseName("core");
// Closing the relay makes the database unreachable for core without stopping the server the other tests share.
let db: TcpRelay;
let core: RunningCore;
// biome-ignore lint/suspicious/noExplicitAny: a client loaded at run time from the health .proto has no static type.
let client: any;

beforeAll(async () => {
  db = await startTcpRelay(uri.href);
  core = await startCore({ mongoUri: db.uri, databaseName, adminToken: "health-test-admin-token-0123", healthIntervalMs: 100 });
  // biome-ignore lint/suspicious/noExplicitAny: see `client`.
  const pkg = loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as any;
  client = new pkg.grpc.health.v1.Health(core.address, credentials.createInsecure());
});
afterAll(async () => {
  client?.close();
  await db?.restore();
  await core?.mongo.db(databaseName).dropDatabase();
  await core?.stop(1_000);
  await db?.close();
});

const check = (service: string) =>
  new Promise<string>((resolve, reject) =>
    client.Check({ service }, (err: Error | null, res: { status: string }) => (err ? reject(err) : resolve(res.status))),
  );

async function untilStatus(service: string, wanted: string): Promise<void> {
  await eventually(async () => expect(await check(service)).toBe(wanted));
}

/** Pings the database has answered so far (each health check while it is up is one). */
async function pings(): Promise<number> {
  const text = await core.metrics.registry.getSingleMetricAsString("mongodb_command_duration_seconds");
  return [...text.matchAll(/_count\{command="ping",outcome="\w+"\} (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

async function untilMorePings(count: number): Promise<void> {
  const target = (await pings()) + count;
  await eventually(async () => expect(await pings()).toBeGreaterThanOrEqual(target));
}

it.runIf(hosts.length === 1)("Health/Watch sends the current status, then only changes of it", async () => {
  await untilStatus("", "SERVING");
  const statuses: string[] = [];
  const stream = client.Watch({ service: "" });
  stream.on("data", (message: { status: string }) => statuses.push(message.status));
  stream.on("error", () => {}); // cancelled at the end
  try {
    // Several health checks with no change: nothing more than the first message.
    await untilMorePings(5);
    expect(statuses).toEqual(["SERVING"]);
    await db.cut();
    await eventually(() => expect(statuses).toContain("NOT_SERVING"));
    await db.restore();
    await eventually(() => expect(statuses.at(-1)).toBe("SERVING"));
    await untilMorePings(5);
    expect(statuses).toEqual(["SERVING", "NOT_SERVING", "SERVING"]);
  } finally {
    stream.cancel();
  }
});

it.runIf(hosts.length === 1)("goes NOT_SERVING while the database is unreachable, and SERVING again when it is back", async () => {
  await untilStatus("", "SERVING");
  await db.cut();
  for (const service of ["", "rms.v1.ResourceService", "rms.v1.AdminService"]) await untilStatus(service, "NOT_SERVING");
  await db.restore();
  for (const service of ["", "rms.v1.ResourceService", "rms.v1.AdminService"]) await untilStatus(service, "SERVING");
});

it.runIf(hosts.length === 1)("while the database answers slowly: still SERVING, but `rms.database` NOT_SERVING (degraded) until it is fast again", async () => {
  await untilStatus("", "SERVING");
  await untilStatus(DATABASE_HEALTH_SERVICE, "SERVING");
  // Every reply of the database half a second later than the slow threshold.
  db.delayReplies(DATABASE_SLOW_MS + 500);
  try {
    await untilStatus(DATABASE_HEALTH_SERVICE, "NOT_SERVING");
    for (const service of ["", "rms.v1.ResourceService"]) expect(await check(service)).toBe("SERVING");
  } finally {
    db.delayReplies(0);
  }
  await untilStatus(DATABASE_HEALTH_SERVICE, "SERVING");
  expect(await check("")).toBe("SERVING");
});
