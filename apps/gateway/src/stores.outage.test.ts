// The gateway's stores when MongoDB does not answer at the gateway's start: the gateway starts anyway (requests that
// need the database get 503), and its stores work once the database answers, without a restart.
import { freePort, startDatabase, type RunningDatabase } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { afterEach, expect, it } from "vitest";
import { openStores, type GatewayStores } from "./stores.js";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

it("work once a database that did not answer at the start answers", async () => {
  const port = await freePort();
  const stores: GatewayStores = openStores(
    { mongoUri: `mongodb://127.0.0.1:${port}/?replicaSet=rs0`, mongoDatabase: "gateway_outage", rateLimitStore: "mongodb" },
    pino({ level: "silent" }),
  );
  stops.push(() => stores.close());
  // A request meets the outage first: refused (the caller answers 503), as the first operation of the client.
  await expect(stores.rateLimiter.take("key_outage", 10)).rejects.toThrow();
  const database: RunningDatabase = await startDatabase({ port, env: { ...process.env, MONGODB_URI: "" }, skip: ["external", "testcontainers"] });
  stops.push(() => database.stop());
  await eventually(
    async () => {
      expect(await stores.rateLimiter.take("key_outage", 10)).toMatchObject({ allowed: true });
      expect(await stores.revocations.list()).toEqual([]);
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}, 120_000);
