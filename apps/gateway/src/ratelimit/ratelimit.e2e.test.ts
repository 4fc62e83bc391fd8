import { testDatabaseName } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";
import { MemoryRateLimiter } from "./memory.js";
import { plainRequest } from "../testutil/raw.js";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./mongo.js";

describe("MemoryRateLimiter (token bucket)", () => {
  it("allows a burst of `perSecond`, then refuses with Retry-After, and refills over time", async () => {
    let now = 1_000_000;
    const limiter = new MemoryRateLimiter(() => now);
    const burst = await Promise.all(Array.from({ length: 7 }, () => limiter.take("key_a", 5)));
    expect(burst.filter((d) => d.allowed)).toHaveLength(5);
    expect(burst[6]).toEqual({ allowed: false, retryAfterSeconds: 1, remaining: 0, resetSeconds: 1 });
    expect(burst.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0]);
    expect((await limiter.take("key_b", 5)).allowed).toBe(true); // other keys have their own bucket
    now += 200; // one token back (5 per second)
    expect((await limiter.take("key_a", 5)).allowed).toBe(true);
    expect((await limiter.take("key_a", 5)).allowed).toBe(false);
    expect(await limiter.take("key_slow", 1)).toEqual({ allowed: true, remaining: 0, resetSeconds: 1 });
    now += 100;
    expect(await limiter.take("key_slow", 1)).toEqual({ allowed: false, retryAfterSeconds: 1, remaining: 0, resetSeconds: 1 });
    await limiter.close();
  });
});

describe("MongoRateLimiter (shared by several gateways)", () => {
  let mongo: MongoClient;
  beforeAll(() => {
    mongo = new MongoClient(inject("mongoUri"));
  });
  afterAll(() => mongo.close());

  it("allows exactly `perSecond` per window across processes, whatever the concurrency", async () => {
    const db = mongo.db(testDatabaseName("ratelimit"));
    let now = 1_700_000_000_250;
    const clock = () => now;
    const gateways = [new MongoRateLimiter(db, clock), new MongoRateLimiter(db, clock), new MongoRateLimiter(db, clock)];
    await gateways[0]!.ensureIndexes();
    const decisions = await Promise.all(Array.from({ length: 45 }, (_, i) => gateways[i % 3]!.take("key_shared", 5)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    for (const d of decisions.filter((d) => !d.allowed)) expect(d).toEqual({ allowed: false, retryAfterSeconds: 1, remaining: 0, resetSeconds: 1 });
    // What is left, as the RateLimit header says it: each of the 5 counts once, whichever gateway took it.
    expect(
      decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort(),
    ).toEqual([0, 1, 2, 3, 4]);
    expect(await db.collection(RATE_LIMIT_COLLECTION).countDocuments({ b: "key_shared" })).toBe(5);

    now += 1_000; // next window: a full bucket again
    const next = await Promise.all(Array.from({ length: 12 }, (_, i) => gateways[i % 3]!.take("key_shared", 5)));
    expect(next.filter((d) => d.allowed)).toHaveLength(5);

    // A token may go once its window and the next one are over (the TTL index `expires_at`).
    const tokens = await db.collection(RATE_LIMIT_COLLECTION).find({ b: "key_shared" }).toArray();
    for (const token of tokens) expect((token["expires_at"] as Date).getTime()).toBe((Number(token["w"]) + 2) * 1_000);
    await Promise.all(gateways.map((g) => g.close()));
    await db.dropDatabase();
  });
});

describe("rate limits at the gateway", () => {
  let stack: Stack;
  // The gateway's limiter runs on this clock: the test passes the Retry-After time without waiting for it.
  let now = 1_700_000_000_000;
  beforeAll(async () => {
    stack = await startStack({ gateway: { rateLimits: { live: 3, test: 2 } }, rateLimiter: new MemoryRateLimiter(() => now) });
  });
  afterAll(() => stack?.stop());

  it("answers 429 rate_limited with Retry-After per key, saves no idempotency record, and allows again after waiting", async () => {
    const { account, key } = await withSecretKey(stack);
    const { secret: otherKey } = await account.key("secret", "test");
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => stack.api.post("/v1/resources", { key, json: { name: "limited" }, headers: { "idempotency-key": `rl-${i}` } })),
    );
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of responses) expect([201, 429]).toContain(r.status);
    for (const r of limited) {
      expect(r.json.error).toMatchObject({ type: "rate_limit_error", code: "rate_limited" });
      expect(r.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
    }
    // The limit is per key: another key of the same account is not limited by this one.
    expect((await stack.api.get("/v1/resources", { key: otherKey })).status).toBe(200);

    // A 429 saved nothing: once allowed, the same key executes (not a replay).
    const refusedKey = responses.findIndex((r) => r.status === 429);
    const mongo = new MongoClient(stack.mongoUri);
    try {
      const records = mongo.db(stack.databaseName).collection("idempotency_keys");
      expect(await records.countDocuments({ _id: `${account.id}/test/rl-${refusedKey}` as never })).toBe(0);
      // Nor did core (a create's answer is recorded with the resource, under the key).
      expect(
        await mongo
          .db(stack.databaseName)
          .collection("resources")
          .countDocuments({ idempotency: `${account.id}/test/rl-${refusedKey}` }),
      ).toBe(0);
    } finally {
      await mongo.close();
    }
    now += Number(limited[0]!.headers["retry-after"]) * 1000;
    const retry = await stack.api.post("/v1/resources", { key, json: { name: "limited" }, headers: { "idempotency-key": `rl-${refusedKey}` } });
    expect(retry.status).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
  });
});

describe("rate limits with RATE_LIMIT_STORE=mongodb", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ gateway: { rateLimits: { live: 3, test: 2 }, rateLimitStore: "mongodb" } });
  });
  afterAll(() => stack?.stop());

  it("limits through the shared store", async () => {
    const { key } = await withSecretKey(stack);
    const responses = await Promise.all(Array.from({ length: 10 }, () => stack.api.get("/v1/resources", { key })));
    expect(responses.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    for (const r of responses) expect([200, 429]).toContain(r.status);
    // The shared store's windows are wall-clock seconds here (the configured store, no injected clock).
    await eventually(async () => expect((await stack.api.get("/v1/resources", { key })).status).toBe(200), { timeoutMs: 10_000, intervalMs: 500 });
  });
});

describe("RateLimit headers from the shared store, across two gateways", () => {
  let stack: Stack;
  // Both gateways' limiters on one clock, so that every request of the test falls in one window of the store.
  let now = 1_700_000_000_100;
  const clock = () => now;
  let first: Awaited<ReturnType<Stack["anotherGateway"]>>;
  let second: Awaited<ReturnType<Stack["anotherGateway"]>>;
  let mongo: MongoClient;
  beforeAll(async () => {
    stack = await startStack({ gateway: { rateLimits: { live: 3, test: 5 }, rateLimitStore: "mongodb" } });
    mongo = new MongoClient(stack.mongoUri);
    const db = mongo.db(stack.databaseName);
    // Two more gateways of the stack's settings, each with its own limiter on the shared store: the pair under test.
    first = await stack.anotherGateway({ rateLimiter: new MongoRateLimiter(db, clock) });
    second = await stack.anotherGateway({ rateLimiter: new MongoRateLimiter(db, clock) });
  });
  afterAll(async () => {
    await stack?.stop();
    await mongo?.close();
  });

  it("counts down one bucket whichever gateway answers, and the 429 carries them beside Retry-After", async () => {
    const { key } = await withSecretKey(stack);
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await (i % 2 === 0 ? first : second).api.get(i === 3 ? "/v1/resources/res_0000000000000000000000" : "/v1/resources", { key });
      expect([200, 404]).toContain(response.status);
      expect(response.headers["ratelimit-policy"]).toBe('"key";q=5;w=1');
      seen.push(response.headers["ratelimit"]!);
    }
    expect(seen).toEqual(['"key";r=4;t=0', '"key";r=3;t=0', '"key";r=2;t=0', '"key";r=1;t=0', '"key";r=0;t=0']);
    for (const gateway of [second, first]) {
      const limited = await gateway.api.get("/v1/resources", { key });
      expect(limited.status).toBe(429);
      expect(limited.headers["retry-after"]).toBe("1");
      expect(limited.headers["ratelimit-policy"]).toBe('"key";q=5;w=1');
      expect(limited.headers["ratelimit"]).toBe('"key";r=0;t=1');
    }
    // Both 429s are in the key's account's request logs (any gateway serves them: one store). Asked through the
    // stack's own gateway (its limiter on the wall clock, 5/s) at most twice a second, so these reads are never 429s.
    await eventually(
      async () => {
        const logs = await stack.api.get("/v1/request_logs?status=429", { key });
        expect(logs.json.data.map((l: { error_code: string }) => l.error_code)).toEqual(["rate_limited", "rate_limited"]);
      },
      { intervalMs: 500 },
    );
    // The next window: a full bucket again, on either gateway.
    now += 1_000;
    expect((await second.api.get("/v1/resources", { key })).headers["ratelimit"]).toBe('"key";r=4;t=0');
    expect((await first.api.get("/v1/resources", { key })).headers["ratelimit"]).toBe('"key";r=3;t=0');
  });

  it("is not part of an answer's idempotency record: a replay carries its own token's headers", async () => {
    const { key } = await withSecretKey(stack);
    now += 1_000;
    const firstAnswer = await first.api.post("/v1/resources", { key, json: { name: "headers" }, headers: { "idempotency-key": "rl-headers" } });
    const replay = await second.api.post("/v1/resources", { key, json: { name: "headers" }, headers: { "idempotency-key": "rl-headers" } });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(firstAnswer.headers["ratelimit"]).toBe('"key";r=4;t=0');
    expect(replay.headers["ratelimit"]).toBe('"key";r=3;t=0');
  });
});

describe("rate limit per client address before a key is verified", () => {
  let stack: Stack;
  let lookups = 0;
  beforeAll(async () => {
    stack = await startStack({
      gateway: { addressRateLimit: 3 },
      wrapCore: (core) => ({
        ...core,
        health: (...args) => core.health(...args),
        close: () => core.close(),
        admin: new Proxy(core.admin, {
          get(target, property, receiver) {
            const value = Reflect.get(target, property, receiver) as unknown;
            if (property !== "verifyKey" || typeof value !== "function") return value;
            return (...args: unknown[]) => {
              lookups++;
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }),
      }),
    });
  });
  afterAll(() => stack?.stop());

  const randomKey = (i: number) => `sk_test_${String(i).padStart(32, "0")}`;

  it("answers 429 once an address has spent its budget, so random keys cost core a bounded number of lookups", async () => {
    const before = lookups;
    const responses = await Promise.all(Array.from({ length: 15 }, (_, i) => stack.api.get("/v1/resources", { key: randomKey(i) })));
    const limited = responses.filter((r) => r.status === 429);
    const looked = responses.filter((r) => r.status === 401);
    expect(limited.length + looked.length).toBe(15);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of limited) {
      expect(r.json.error.code).toBe("rate_limited");
      expect(r.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
      expect(r.headers["stripe-should-retry"]).toBe("true");
    }
    // Only the requests let through asked core about their key.
    expect(lookups - before).toBe(looked.length);
  });

  it("limits plain-HTTP requests that carry keys too: still 403 https_required, without asking core", async () => {
    // From 127.0.0.2: an address with its own, untouched budget.
    const before = lookups;
    const responses = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        plainRequest(stack.gateway.httpPort!, { path: "/v1/resources", headers: { authorization: `Bearer ${randomKey(100 + i)}` }, localAddress: "127.0.0.2" }),
      ),
    );
    for (const r of responses) expect(r.json.error.code).toBe("https_required");
    expect(lookups - before).toBeGreaterThan(0);
    expect(lookups - before).toBeLessThan(15);
  });

  it("counts each key a plain-HTTP request carries: 5 keys from a fresh address with 3 tokens, 3 lookups", async () => {
    // From 127.0.0.3: a bucket of its own, full (3 tokens).
    const before = lookups;
    const keys = Array.from({ length: 5 }, (_, i) => randomKey(200 + i));
    const response = await plainRequest(stack.gateway.httpPort!, {
      path: `/v1/resources?${keys.map((key, i) => `k${i}=${key}`).join("&")}`,
      localAddress: "127.0.0.3",
    });
    expect(response.json.error.code).toBe("https_required");
    expect(lookups - before).toBe(3);
  });
});
