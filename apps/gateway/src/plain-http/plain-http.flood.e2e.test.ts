import { keyHash } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PENDING_REVOCATIONS_COLLECTION } from "../revocation/pending-store.js";
import { MAX_CANDIDATES } from "../revocation/scan.js";
import { startStack, type Stack } from "../testutil/harness.js";
import { plainRequest } from "../testutil/raw.js";

// CONTRACT.md section 8, end to end: a plain-HTTP flood of key-shaped strings while core is down. The gateway's
// memory of pending revocations stays at its cap (here 500, to keep the flood short; MAX_PENDING_IN_MEMORY, 10,000,
// is the real one, held at that size in revoker.test.ts), and the valid keys in the flood are revoked once core is back:
// the newest from memory, the oldest (dropped from memory) from the store.

const CAP = 500;
const REQUESTS = 100; // x 20 candidates = 2,000 distinct key-shaped strings, four times the cap
let t: Stack;
let mongo: MongoClient;
beforeAll(async () => {
  t = await startStack({ maxPendingRevocations: CAP });
  mongo = new MongoClient(t.mongoUri);
});
afterAll(async () => {
  await mongo?.close();
  await t?.stop();
});

async function pendingInMemory(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${t.gateway.metricsPort}/metrics`)).text();
  return Number(/^gateway_pending_revocations (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

describe("a plain-HTTP flood while core is down", () => {
  it("keeps the gateway's pending revocations at the cap, and the valid keys in the flood are revoked once core is back", async () => {
    const account = await t.newAccount();
    const first = (await account.key("secret")).secret;
    const last = (await account.key("restricted", "test", { scopes: ["resources:read"] })).secret;
    const junk = (i: number) => `sk_test_${String(i).padStart(32, "0")}`;
    const candidatesOf = (r: number) => {
      const keys = Array.from({ length: MAX_CANDIDATES }, (_, j) => junk(r * MAX_CANDIDATES + j));
      if (r === 0) keys[0] = first;
      if (r === REQUESTS - 1) keys[MAX_CANDIDATES - 1] = last;
      return keys;
    };

    await t.stopCore();
    const rssBefore = process.memoryUsage().rss;
    // Ten clients, one request at a time each, every request a form body of 20 keys; the first request carries
    // `first`, the last one `last`.
    let next = 0;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let r = next++; r < REQUESTS; r = next++) {
          const body = candidatesOf(r)
            .map((key, j) => `k${j}=${key}`)
            .join("&");
          const response = await plainRequest(t.gateway.httpPort!, {
            method: "POST",
            path: "/v1/resources",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body,
          });
          statuses.push(response.status);
        }
      }),
    );
    const rssAfter = process.memoryUsage().rss;
    const inMemory = await pendingInMemory();
    const stored = await mongo.db(t.databaseName).collection(PENDING_REVOCATIONS_COLLECTION).countDocuments();
    console.log(
      `flood of ${REQUESTS * MAX_CANDIDATES} key-shaped strings in ${REQUESTS} plain-HTTP requests with core down: ` +
        `${inMemory} pending in memory (cap ${CAP}), ${stored} in the store; RSS of the test process (gateway and test client) ${mib(rssBefore)} ` +
        `before, ${mib(rssAfter)} after`,
    );
    expect(statuses.every((status) => status === 403)).toBe(true);
    expect(inMemory).toBe(CAP);
    expect(stored).toBe(REQUESTS * MAX_CANDIDATES);

    await t.restartCore();
    await eventually(async () => expect([await t.coreVerdict(first), await t.coreVerdict(last)]).toEqual(["api_key_revoked", "api_key_revoked"]), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    await eventually(
      async () =>
        expect(
          await mongo
            .db(t.databaseName)
            .collection(PENDING_REVOCATIONS_COLLECTION)
            .countDocuments({ _id: { $in: [keyHash(first), keyHash(last)] } as never }),
        ).toBe(0),
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect((await t.api.get("/v1/resources", { key: last })).json.error.code).toBe("api_key_revoked");
  }, 240_000);
});
