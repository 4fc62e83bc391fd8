import { MongoServerError } from "mongodb";
import { expect, it } from "vitest";
import { throughOutage } from "./through-outage.js";

const notPrimary = () => new MongoServerError({ code: 10107, errmsg: "not primary" });

function recorder() {
  const lines: string[] = [];
  return { lines, logger: { warn: (_fields: object, message: string) => void lines.push(message) } };
}

it("runs a step again while the database has no primary, and answers what the step finally returns", async () => {
  const { lines, logger } = recorder();
  let calls = 0;
  const result = await throughOutage(
    async () => {
      calls += 1;
      if (calls < 3) throw notPrimary();
      return "declared";
    },
    { logger, what: "core indexes", delayMs: () => 1 },
  );
  expect(result).toBe("declared");
  expect(calls).toBe(3);
  expect(lines).toEqual(["core indexes: database unavailable; retrying", "core indexes: database unavailable; retrying"]);
});

it("throws any other error at once", async () => {
  const { lines, logger } = recorder();
  let calls = 0;
  const refused = new MongoServerError({ code: 2, errmsg: "bad value" });
  await expect(
    throughOutage(
      async () => {
        calls += 1;
        throw refused;
      },
      { logger, what: "core indexes", delayMs: () => 1 },
    ),
  ).rejects.toBe(refused);
  expect(calls).toBe(1);
  expect(lines).toEqual([]);
});

it("gives up once the outage has lasted longer than allowed, with the step's own error", async () => {
  const { logger } = recorder();
  let clock = 0;
  let calls = 0;
  const error = notPrimary();
  await expect(
    throughOutage(
      async () => {
        calls += 1;
        clock += 400;
        throw error;
      },
      { logger, what: "core indexes", giveUpAfterMs: 1_000, delayMs: () => 1, now: () => clock },
    ),
  ).rejects.toBe(error);
  expect(calls).toBe(3);
});
