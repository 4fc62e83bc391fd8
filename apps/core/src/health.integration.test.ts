import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { credentials, loadPackageDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { startCore, type RunningCore } from "./server.js";

/**
 * A TCP relay in front of the test database: closing it makes the database
 * unreachable for core without stopping the database the other tests share.
 */
function relay(target: { host: string; port: number }) {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  let port = 0;
  return {
    get port() {
      return port;
    },
    open: () =>
      new Promise<void>((resolve, reject) => {
        server = createServer((client) => {
          const upstream = connect(target.port, target.host);
          for (const socket of [client, upstream]) {
            sockets.add(socket);
            socket.on("close", () => sockets.delete(socket));
            socket.on("error", () => {
              client.destroy();
              upstream.destroy();
            });
          }
          client.pipe(upstream).pipe(client);
        });
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
          port = (server!.address() as AddressInfo).port;
          resolve();
        });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server ? server.close(() => resolve()) : resolve();
      }),
  };
}

const uri = new URL(inject("mongoUri"));
const hosts = uri.host.split(",");
const db = relay({ host: uri.hostname, port: Number(uri.port || 27017) });
let core: RunningCore;
let client: any; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  await db.open();
  const relayed = new URL(uri);
  relayed.host = `127.0.0.1:${db.port}`;
  relayed.searchParams.set("directConnection", "true");
  core = await startCore({ mongoUri: relayed.toString(), databaseName: testDatabaseName("core"), adminToken: "health-test-admin-token-0123", healthIntervalMs: 100 });
  const pkg = loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  client = new pkg.grpc.health.v1.Health(core.address, credentials.createInsecure());
});
afterAll(async () => {
  client?.close();
  await db.close();
  await core?.stop(1_000);
});

const check = (service: string) =>
  new Promise<string>((resolve, reject) => client.Check({ service }, (err: Error | null, res: { status: string }) => (err ? reject(err) : resolve(res.status))));

async function eventually(service: string, wanted: string): Promise<void> {
  for (;;) {
    if ((await check(service)) === wanted) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Pings the database has answered so far (each health check while it is up is one). */
async function pings(): Promise<number> {
  const text = await core.metrics.registry.getSingleMetricAsString("mongodb_command_duration_seconds");
  return [...text.matchAll(/_count\{command="ping",outcome="\w+"\} (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

async function untilMorePings(count: number): Promise<void> {
  const target = (await pings()) + count;
  while ((await pings()) < target) await new Promise((r) => setTimeout(r, 50));
}

it.runIf(hosts.length === 1)("Health/Watch sends the current status, then only changes of it", async () => {
  await eventually("", "SERVING");
  const statuses: string[] = [];
  const stream = client.Watch({ service: "" });
  stream.on("data", (message: { status: string }) => statuses.push(message.status));
  stream.on("error", () => {}); // cancelled at the end
  try {
    // Several health checks with no change: nothing more than the first message.
    await untilMorePings(5);
    expect(statuses).toEqual(["SERVING"]);
    await db.close();
    while (!statuses.includes("NOT_SERVING")) await new Promise((r) => setTimeout(r, 50));
    await db.open();
    while (statuses.at(-1) !== "SERVING") await new Promise((r) => setTimeout(r, 50));
    await untilMorePings(5);
    expect(statuses).toEqual(["SERVING", "NOT_SERVING", "SERVING"]);
  } finally {
    stream.cancel();
  }
});

it.runIf(hosts.length === 1)("goes NOT_SERVING while the database is unreachable, and SERVING again when it is back", async () => {
  await eventually("", "SERVING");
  await db.close();
  for (const service of ["", "rms.v1.ResourceService", "rms.v1.AdminService"]) await eventually(service, "NOT_SERVING");
  await db.open();
  for (const service of ["", "rms.v1.ResourceService", "rms.v1.AdminService"]) await eventually(service, "SERVING");
});
