import { MongoBulkWriteError, MongoNetworkError, MongoServerError } from "mongodb";
import { expect, it } from "vitest";
import { backoffMs, ContentionError, isTransient } from "./transient.js";

it("tells transient failures (no answer, a cleared pool under a batch, lost races, time limits) from refusals and bugs", () => {
  expect(isTransient(new MongoNetworkError("cut"))).toBe(true);
  expect(isTransient(new ContentionError("races"))).toBe(true);
  expect(isTransient(new MongoServerError({ code: 50, errmsg: "time limit" }))).toBe(true);
  expect(isTransient(new MongoBulkWriteError({ message: "pool cleared", code: undefined, writeErrors: [] } as never, { insertedCount: 0 } as never))).toBe(
    true,
  );
  expect(isTransient(new MongoServerError({ code: 2, errmsg: "bad value" }))).toBe(false);
  expect(isTransient(new MongoServerError({ code: 1, errmsg: "internal error" }))).toBe(false);
  expect(isTransient(new TypeError("bug"))).toBe(false);
});

it("backs off doubling from half a second up to 30 s, with at most a fifth of jitter", () => {
  expect([1, 2, 3, 7, 20].map((n) => backoffMs(n, () => 0))).toEqual([500, 1_000, 2_000, 30_000, 30_000]);
  expect(backoffMs(1, () => 1)).toBe(600);
});
