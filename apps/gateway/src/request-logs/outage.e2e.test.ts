import { eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";
import { databaseRelay } from "../testutil/relay.js";

// The gateway's database stopped (its connection cut by the relay; core keeps its own): requests are answered as
// usual, the request logs wait in memory up to REQUEST_LOGS_BUFFER, the oldest are dropped and counted in
// gateway_request_logs_dropped_total, and the ones kept are listed once the database is back.

let stack: Stack;
let relay: Awaited<ReturnType<typeof databaseRelay>>;
beforeAll(async () => {
  relay = await databaseRelay();
  stack = await startStack({ gateway: { mongoUri: relay.uri, requestLogs: { enabled: true, buffer: 5, retentionDays: 14 } } });
});
afterAll(async () => {
  await stack?.stop();
  await relay?.close();
});

const metric = async (name: string): Promise<number> => {
  const text = await (await fetch(`http://127.0.0.1:${stack.gateway.metricsPort}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(" ")[1]);
};

it("answers every request while the database is stopped, keeps the newest REQUEST_LOGS_BUFFER logs and counts the dropped ones", async () => {
  const { key } = await withSecretKey(stack);
  expect(await metric("gateway_request_logs_dropped_total")).toBe(0);
  await relay.cut();
  const answered: string[] = [];
  try {
    for (let i = 0; i < 12; i++) {
      const response = await stack.api.get("/v1/resources", { key });
      expect(response.status).toBe(200);
      answered.push(response.headers["request-id"]!);
    }
    // A record goes to the buffer once its answer has been sent, and a batch whose insert is still failing counts
    // again once it is back in the buffer: the figures settle within the driver's server selection timeout.
    await eventually(
      async () => {
        expect(await metric("gateway_request_logs_dropped_total")).toBe(7);
        expect(await metric("gateway_request_logs_waiting")).toBe(5);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  } finally {
    await relay.restore();
  }
  // Back: the 5 kept are written (the metrics endpoint is watched: a listing would add a record to a full buffer)...
  await eventually(async () => expect(await metric("gateway_request_logs_written_total")).toBe(5), { timeoutMs: 60_000, intervalMs: 250 });
  expect(await metric("gateway_request_logs_waiting")).toBe(0);
  // ...and listed; the 7 dropped never are.
  const listed = await eventually(
    async () => {
      const page = await stack.api.get("/v1/request_logs?path=/v1/resources&limit=100", { key });
      expect(page.status).toBe(200);
      const ids = (page.json.data as { id: string }[]).map((l) => l.id).filter((id) => answered.includes(id));
      expect(ids).toHaveLength(5);
      return ids;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  expect(listed).toEqual(answered.slice(7).reverse());
  expect(await metric("gateway_request_logs_dropped_total")).toBe(7);
}, 120_000);
